// Webhook endpoints (issue 29): the fields of schema.graphql's webhook block. The rules live in
// src/webhooks/endpoints.ts; scopes are @requiresScope's, the tenant rule data/webhooks.ts's.
import type { GraphQLResolveInfo } from "graphql";
import { rootFieldsOf } from "../root-fields";
import type { RequestContext } from "../../context";
import * as endpoints from "../../webhooks/endpoints";

type Page = { limit?: number | null; cursor?: string | null };

/**
 * How many times execution runs the field being resolved at the operation's root (graphql/root-fields.ts:
 * aliases and fragments included, fields a @skip or @include leaves out not, one run per response name).
 */
function rootFieldRuns(info: GraphQLResolveInfo): number {
  const fields = rootFieldsOf(info.schema, info.fragments, info.operation, info.parentType, info.variableValues);
  return [...fields.values()].filter(([field]) => field.name.value === info.fieldName).length;
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
      endpoints.testEndpoint(ctx, ctx.webhooks, a.id, rootFieldRuns(info)),
    replayWebhookEndpoint: (_: unknown, a: ById & { cursor?: string | null; since?: Date | null }, ctx: RequestContext) =>
      endpoints.replayEndpoint(ctx, a.id, a.cursor, a.since),
  },
};
