// What a resolver module declares on a field for the JSON read path (graphql/json-plan.ts): a root
// field's page readers (jsonPage), a relation's SQL terms (jsonRelation). Kept apart from json-plan.ts,
// which imports the schema and so the resolvers: a resolver module imports this file, not that one.
import type { GraphQLField } from "graphql";
import type { RequestContext } from "../context";
import type { JsonObject, JsonRelation, JsonRow } from "../data/json-rows";
import type { CursorKey } from "../pagination/cursor";
import type { Page } from "../pagination/keyset";

export type Row = Record<string, unknown>;
export type PageReader<R> = (args: Record<string, unknown>, ctx: RequestContext, object: JsonObject) => Promise<Page<R>>;

/**
 * A root field this path reads, a keyset page of a type above, as its resolver module declares it in
 * the field's extensions (`extensions: jsonPage(...)`). `read` has PostgreSQL write each node's
 * JSON; `readRows` reads a flat selection (columns only) as row objects that Node serialises, which
 * costs PostgreSQL far less than its JSON functions; it needs the cursor's `key` fields selected.
 */
export interface JsonPage {
  nodes: string;
  read: PageReader<JsonRow>;
  key: readonly string[];
  readRows: (keyOf: (row: Row) => CursorKey) => PageReader<Row>;
}

/** A root field's extensions that put it on this path. */
export const jsonPage = (page: JsonPage) => ({ jsonPage: page });
/** A relation field's extensions that put it on this path: what its resolver loads, in SQL terms. */
export const jsonRelation = (relation: JsonRelation) => ({ jsonRelation: relation });

export const pageOf = (field: GraphQLField<unknown, unknown> | undefined) => field?.extensions.jsonPage as JsonPage | undefined;
export const relationOf = (field: GraphQLField<unknown, unknown>) => field.extensions.jsonRelation as JsonRelation | undefined;
