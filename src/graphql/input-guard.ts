// Checks /graphql input that no scalar sees before it reaches the database: text it cannot hold (a NUL
// character, a lone surrogate; graphql/text.ts) in any variable or string literal. Runs once the
// operation is resolved, before it executes.
import type { ApolloServerPlugin } from "@apollo/server";
import { visit, type DocumentNode } from "graphql";
import { invalidRequest, withHttpStatus } from "../errors";
import { isStorableText, unstorableDetail, unstorablePath } from "./text";

/** Documents already found free of such literals: Apollo hands back the same parsed document per query text. */
const cleanDocuments = new WeakSet<DocumentNode>();

/**
 * Whether the plugin below lets this request through: its variables hold only storable text and its
 * document was already found free of unstorable literals (the /graphql fast path asks, and leaves
 * any other request to Apollo, whose plugin then refuses it).
 */
export function passesInputGuard(document: DocumentNode, variables: Record<string, unknown> | undefined): boolean {
  return cleanDocuments.has(document) && unstorablePath(variables ?? {}, "") === undefined;
}

export function inputGuardPlugin(): ApolloServerPlugin {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ request, document }) {
          const at = unstorablePath(request.variables ?? {}, "");
          if (at !== undefined) throw withHttpStatus(invalidRequest(`variable ${unstorableDetail(`$${at}`)}`));
          if (cleanDocuments.has(document)) return;
          visit(document, {
            StringValue(node) {
              if (!isStorableText(node.value)) {
                const line = node.loc ? ` at line ${node.loc.startToken.line}, column ${node.loc.startToken.column}` : "";
                throw withHttpStatus(invalidRequest(unstorableDetail(`the string literal${line}`)));
              }
            },
          });
          cleanDocuments.add(document);
        },
      };
    },
  };
}
