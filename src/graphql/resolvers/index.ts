import type { GraphQLContext } from "../../context";
import { DateScalar, DateTime, JSONScalar, UUID } from "../scalars";
import { guestResolvers } from "./guests";
import { propertyResolvers } from "./properties";

const viewerResolvers = {
  Query: {
    viewer: (_: unknown, __: unknown, ctx: GraphQLContext) => ({
      kind: ctx.credential.kind,
      propertyGroupId: ctx.scope.propertyGroupId,
      propertyId: ctx.scope.propertyId,
      scopes: [...ctx.credential.scopes].sort(),
    }),
  },
};

export const resolvers = [
  { DateTime, Date: DateScalar, UUID, JSON: JSONScalar },
  viewerResolvers,
  propertyResolvers,
  guestResolvers,
];
