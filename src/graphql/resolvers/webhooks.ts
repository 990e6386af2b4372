// Webhook endpoints (issue 29): the fields of schema.graphql's webhook block. The rules live in
// src/webhooks/endpoints.ts; scopes are @requiresScope's, the tenant rule data/webhooks.ts's.
import { getDirectiveValues, GraphQLIncludeDirective, GraphQLSkipDirective, type GraphQLResolveInfo, type SelectionNode, type SelectionSetNode } from "graphql";
import type { RequestContext } from "../../context";
import * as endpoints from "../../webhooks/endpoints";

type Page = { limit?: number | null; cursor?: string | null };

/** Whether execution runs a selection: its @skip and @include, with the request's variables. */
function runs(info: GraphQLResolveInfo, s: SelectionNode): boolean {
  if (getDirectiveValues(GraphQLSkipDirective, s, info.variableValues)?.if === true) return false;
  return getDirectiveValues(GraphQLIncludeDirective, s, info.variableValues)?.if !== false;
}

/**
 * How many times execution runs the field being resolved at the operation's root, as graphql-js
 * collects fields: aliases and fragments included, fields a @skip or @include leaves out not, one
 * run per response name (the same name twice is merged into one), each named fragment once.
 */
function rootFieldRuns(info: GraphQLResolveInfo, set: SelectionSetNode, names = new Set<string>(), fragments = new Set<string>()): number {
  for (const s of set.selections) {
    if (!runs(info, s)) continue;
    if (s.kind === "Field") {
      if (s.name.value === info.fieldName) names.add(s.alias?.value ?? s.name.value);
    } else if (s.kind === "InlineFragment") rootFieldRuns(info, s.selectionSet, names, fragments);
    else if (!fragments.has(s.name.value) && info.fragments[s.name.value]) {
      fragments.add(s.name.value);
      rootFieldRuns(info, info.fragments[s.name.value].selectionSet, names, fragments);
    }
  }
  return names.size;
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
      endpoints.testEndpoint(ctx, ctx.webhooks, a.id, rootFieldRuns(info, info.operation.selectionSet)),
    replayWebhookEndpoint: (_: unknown, a: ById & { cursor?: string | null; since?: Date | null }, ctx: RequestContext) =>
      endpoints.replayEndpoint(ctx, a.id, a.cursor, a.since),
  },
};
