// Properties and the integration roster: full sets, not paged (data/properties.ts).
import type { RequestContext } from "../../context";
import { notFound, sessionRequired } from "../../errors";

export const propertyResolvers = {
  Query: {
    properties: (_: unknown, __: unknown, ctx: RequestContext) => ctx.data.properties.all(),

    property: async (_: unknown, args: { id: string }, ctx: RequestContext) => {
      const property = await ctx.loaders.property.load(args.id);
      if (!property) throw notFound("property", args.id);
      return property;
    },

    integrations: (_: unknown, __: unknown, ctx: RequestContext) => ctx.data.properties.integrations(),

    integrationConnection: async (_: unknown, args: { integrationId: string }, ctx: RequestContext) => {
      if (ctx.credential.kind !== "session") throw sessionRequired();
      const connection = await ctx.data.properties.connectionOf(args.integrationId);
      if (!connection) throw notFound("integration connection", args.integrationId);
      return connection;
    },
  },

  Integration: {
    property: (row: { propertyId: string }, _: unknown, ctx: RequestContext) => ctx.loaders.property.load(row.propertyId),
  },
};
