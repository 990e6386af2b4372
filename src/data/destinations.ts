// Destination bindings of tables: read and moved through the request's scoped clients; the state
// machine itself is delivery/bindings.ts.
import { bindingView, pauseBinding, resumeBinding, type BindingRef, type BindingView } from "../delivery/bindings";
import type { Readers } from "./readers";

export function destinations(r: Readers) {
  return {
    /** The binding views (spec 2.2) of these tables' bindings, by provider. */
    async ofTables(tableIds: readonly string[]): Promise<BindingView[]> {
      const bindings = await r.prisma.destinationBinding.findMany({ where: { tableId: { in: [...tableIds] } }, orderBy: { provider: "asc" } });
      return Promise.all(bindings.map((b) => bindingView(r.prisma, b)));
    },
    pause: (ref: BindingRef) => pauseBinding(r.primary, ref),
    resume: (ref: BindingRef) => resumeBinding(r.primary, ref),
  };
}
