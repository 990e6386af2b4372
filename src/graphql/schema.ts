// Loads schema.graphql (the contract), attaches resolvers and enforces @requiresScope on every
// field that carries it, so no resolver can forget its scope check.
import { defaultFieldResolver, type GraphQLSchema } from "graphql";
import { makeExecutableSchema } from "@graphql-tools/schema";
import { MapperKind, getDirective, mapSchema } from "@graphql-tools/utils";
import type { RequestContext } from "../context";
import { missingScope } from "../errors";
import { resolvers } from "./resolvers";
import { SCHEMA_PATH, loadTypeDefs } from "./schema-source";

export { SCHEMA_PATH, loadTypeDefs };

export function buildSchema(): GraphQLSchema {
  const schema = makeExecutableSchema({ typeDefs: loadTypeDefs(), resolvers });
  return mapSchema(schema, {
    [MapperKind.OBJECT_FIELD]: (field) => {
      const required = requiredScope(schema, field);
      if (!required) return field;
      const resolve = field.resolve ?? defaultFieldResolver;
      field.resolve = (source, args, ctx: RequestContext, info) => {
        if (!ctx.credential.scopes.has(required)) throw missingScope(required);
        return resolve(source, args, ctx, info);
      };
      // A subscription field (graphql/stream.ts) is checked before its stream opens.
      const subscribe = field.subscribe;
      if (subscribe) {
        field.subscribe = (source, args, ctx: RequestContext, info) => {
          if (!ctx.credential.scopes.has(required)) throw missingScope(required);
          return subscribe(source, args, ctx, info);
        };
      }
      return field;
    },
  });
}

/** The scope a field's @requiresScope names, if it carries one. */
export function requiredScope(schema: GraphQLSchema, field: Parameters<typeof getDirective>[1]): string | undefined {
  return getDirective(schema, field, "requiresScope")?.[0]?.scope as string | undefined;
}
