// Destination bindings of tables: read and moved through the request's scoped clients; the state
// machine itself is delivery/bindings.ts.
import { bindingView, pauseBinding, resumeBinding, type BindingRef } from "../delivery/bindings";
import type { Prisma } from "../generated/prisma/client";
import type { Readers } from "./readers";

export type BindingRow = Prisma.DestinationBindingGetPayload<object>;

export function destinations(r: Readers) {
  return {
    ofTables: (tableIds: readonly string[]) =>
      r.prisma.destinationBinding.findMany({ where: { tableId: { in: [...tableIds] } }, orderBy: { provider: "asc" } }),
    view: (binding: BindingRow) => bindingView(r.prisma, binding),
    pause: (ref: BindingRef) => pauseBinding(r.primary, ref),
    resume: (ref: BindingRef) => resumeBinding(r.primary, ref),
  };
}
