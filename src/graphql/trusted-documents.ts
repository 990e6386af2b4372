// Trusted documents (Hasura's allow-list, PostGraphile's persisted operations): with
// GCS_GRAPHQL_TRUSTED_DOCUMENTS set, /graphql runs only the documents whose sha256 the file lists,
// for example a dashboard's own queries extracted when it is built; anything else is
// `400 untrusted_document`. The REST facade and the MCP tools run the service's own operations
// in-process, not through /graphql, so they always pass.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import type { ApolloServerPlugin } from "@apollo/server";
import { untrustedDocument, withHttpStatus } from "../errors";

const SHA256_HEX = /^[0-9a-f]{64}$/;

/** sha256 of the document text exactly as sent, lower-case hex (what Apollo calls the query hash). */
export const documentHash = (text: string) => createHash("sha256").update(text).digest("hex");

/**
 * The allowed hashes of a JSON file: an array of hashes, or an object keyed by hash whose values are
 * the documents (GraphQL Code Generator's persisted-documents.json), each checked against its hash.
 * A file that is not one of these fails start-up with the file and the entry named.
 */
export function loadTrustedDocuments(path: string): Set<string> {
  const fail = (why: string) => new Error(`GCS_GRAPHQL_TRUSTED_DOCUMENTS (${path}): ${why}`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, "utf8"));
  } catch (err) {
    throw fail(`cannot read it as JSON: ${(err as Error).message}`);
  }
  const entries: [string, unknown][] = Array.isArray(parsed)
    ? parsed.map((hash) => [hash, undefined])
    : typeof parsed === "object" && parsed !== null
      ? Object.entries(parsed)
      : [];
  if (entries.length === 0) throw fail("expected a non-empty array of sha256 hashes, or an object of documents keyed by their sha256");
  for (const [hash, document] of entries) {
    if (typeof hash !== "string" || !SHA256_HEX.test(hash)) throw fail(`${JSON.stringify(hash)} is not a sha256 in lower-case hex`);
    if (document !== undefined && (typeof document !== "string" || documentHash(document) !== hash)) {
      throw fail(`the document listed under ${hash} does not have that sha256`);
    }
  }
  return new Set(entries.map(([hash]) => hash));
}

export function trustedDocumentsPlugin(allowed: ReadonlySet<string>): ApolloServerPlugin {
  return {
    async requestDidStart() {
      return {
        // Apollo has hashed the text already (requestContext.queryHash); a refusal here is answered
        // with its status, before anything executes.
        async didResolveOperation({ queryHash }) {
          if (!allowed.has(queryHash)) throw withHttpStatus(untrustedDocument());
        },
      };
    },
  };
}
