// Checks /graphql input that no scalar sees before it reaches PostgreSQL: a NUL character in a String
// variable or string literal (graphql/text.ts). Runs once the operation is resolved, before it executes.
import type { ApolloServerPlugin } from "@apollo/server";
import { visit, type DocumentNode } from "graphql";
import { invalidRequest, withHttpStatus } from "./errors";
import { hasNul, nulDetail, nulPath } from "./text";

/** Documents already found free of NUL literals: Apollo hands back the same parsed document per query text. */
const cleanDocuments = new WeakSet<DocumentNode>();

export function inputGuardPlugin(): ApolloServerPlugin {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ request, document }) {
          const at = nulPath(request.variables ?? {}, "");
          if (at !== undefined) throw withHttpStatus(invalidRequest(`variable ${nulDetail(`$${at}`)}`));
          if (cleanDocuments.has(document)) return;
          visit(document, {
            StringValue(node) {
              if (hasNul(node.value)) {
                const line = node.loc ? ` at line ${node.loc.startToken.line}, column ${node.loc.startToken.column}` : "";
                throw withHttpStatus(invalidRequest(`the string literal${line} must not contain a NUL character (U+0000)`));
              }
            },
          });
          cleanDocuments.add(document);
        },
      };
    },
  };
}
