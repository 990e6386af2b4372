// The root fields an operation runs: through inline fragments and fragment spreads, less those
// @skip/@include leave out for the request's variables. graphql-js's own collection (what execute
// and subscribe run, and what SingleFieldSubscriptionsRule counts), not a walk of the document's
// top-level selections, which misses `... on Subscription { events }` and named fragments.
import { Kind, type DocumentNode, type FieldNode, type FragmentDefinitionNode, type GraphQLObjectType, type GraphQLSchema, type OperationDefinitionNode } from "graphql";
import { collectFields } from "graphql/execution/collectFields";

/** A document's fragment definitions by name, as execution looks them up. */
export function fragmentsOf(document: DocumentNode): Record<string, FragmentDefinitionNode> {
  const fragments: Record<string, FragmentDefinitionNode> = Object.create(null);
  for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments[d.name.value] = d;
  return fragments;
}

/** The operation's root fields by response key (an alias, else the name), as they will execute. */
export function rootFieldsOf(
  schema: GraphQLSchema,
  fragments: Record<string, FragmentDefinitionNode>,
  operation: OperationDefinitionNode,
  rootType: GraphQLObjectType,
  variableValues: Record<string, unknown>,
): Map<string, readonly FieldNode[]> {
  return collectFields(schema, fragments, variableValues, rootType, operation.selectionSet);
}
