// Properties and the integration roster: full sets, not paged.
import type { GraphQLContext } from "../../context";
import { notFound, sessionRequired } from "../errors";

export const propertyResolvers = {
  Query: {
    properties: (_: unknown, __: unknown, ctx: GraphQLContext) =>
      ctx.db.property.findMany({ orderBy: [{ name: "asc" }, { id: "asc" }] }),

    property: async (_: unknown, args: { id: string }, ctx: GraphQLContext) => {
      const property = await ctx.loaders.property.load(args.id);
      if (!property) throw notFound("property", args.id);
      return property;
    },

    integrations: (_: unknown, __: unknown, ctx: GraphQLContext) =>
      ctx.db.integration.findMany({ orderBy: [{ name: "asc" }, { id: "asc" }] }),

    integrationConnection: async (_: unknown, args: { integrationId: string }, ctx: GraphQLContext) => {
      if (ctx.credential.kind !== "session") throw sessionRequired();
      const connection = await ctx.db.integrationConnection.findFirst({
        where: { integrationId: args.integrationId },
        // The ciphertext never leaves the database.
        omit: { secretCiphertext: true },
      });
      if (!connection) throw notFound("integration connection", args.integrationId);
      return connection;
    },
  },

  Integration: {
    property: (row: { propertyId: string }, _: unknown, ctx: GraphQLContext) => ctx.loaders.property.load(row.propertyId),
  },
};
