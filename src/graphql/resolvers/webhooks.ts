// Webhook endpoints (issue 29): the fields of schema.graphql's webhook block. The rules live in
// src/webhooks/endpoints.ts; scopes are @requiresScope's, the tenant rule data/webhooks.ts's.
import type { GraphQLResolveInfo, SelectionSetNode } from "graphql";
import type { RequestContext } from "../../context";
import * as endpoints from "../../webhooks/endpoints";

type Page = { limit?: number | null; cursor?: string | null };

/** How many times the operation selects the field being resolved at its root (aliases and fragments included). */
function rootFields(info: GraphQLResolveInfo, set: SelectionSetNode): number {
  let n = 0;
  for (const s of set.selections) {
    if (s.kind === "Field") n += s.name.value === info.fieldName ? 1 : 0;
    else if (s.kind === "InlineFragment") n += rootFields(info, s.selectionSet);
    else n += info.fragments[s.name.value] ? rootFields(info, info.fragments[s.name.value].selectionSet) : 0;
  }
  return n;
}
type ById = { id: string };

export const webhookResolvers = {
  Query: {
    webhookEndpoints: (_: unknown, a: Page, ctx: RequestContext) => endpoints.listEndpoints(ctx, a.limit, a.cursor),
    webhookEndpoint: async (_: unknown, a: ById, ctx: RequestContext) => endpoints.endpointView(await endpoints.found(ctx, a.id)),
    webhookDeliveries: (_: unknown, a: Page & { endpointId: string }, ctx: RequestContext) =>
      endpoints.listDeliveries(ctx, a.endpointId, a.limit, a.cursor),
  },
  Mutation: {
    createWebhookEndpoint: (_: unknown, a: endpoints.NewEndpointInput, ctx: RequestContext) => endpoints.createEndpoint(ctx, ctx.webhooks, a),
    deleteWebhookEndpoint: (_: unknown, a: ById, ctx: RequestContext) => endpoints.deleteEndpoint(ctx, a.id),
    rotateWebhookSecret: (_: unknown, a: ById, ctx: RequestContext) => endpoints.rotateSecret(ctx, ctx.webhooks, a.id),
    testWebhookEndpoint: (_: unknown, a: ById, ctx: RequestContext, info: GraphQLResolveInfo) =>
      endpoints.testEndpoint(ctx, ctx.webhooks, a.id, rootFields(info, info.operation.selectionSet)),
    replayWebhookEndpoint: (_: unknown, a: ById & { cursor?: string | null; since?: Date | null }, ctx: RequestContext) =>
      endpoints.replayEndpoint(ctx, a.id, a.cursor, a.since),
  },
};
