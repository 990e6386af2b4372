// The dashboard's trusted documents, made from src/dashboard/operations.graphql (see
// scripts/dashboard-documents.ts); a unit test keeps dashboard/trusted-documents.json equal to it.
import { readFileSync } from "node:fs";
import path from "node:path";
import { Kind, parse, print } from "graphql";
import { documentHash } from "../graphql/trusted-documents";

export const DASHBOARD_OPERATIONS = path.join(__dirname, "operations.graphql");

/** sha256 → document text, one per named operation. */
export function dashboardDocuments(source = readFileSync(DASHBOARD_OPERATIONS, "utf8")): Record<string, string> {
  const out: Record<string, string> = {};
  for (const definition of parse(source).definitions) {
    if (definition.kind !== Kind.OPERATION_DEFINITION) continue;
    const text = print(definition);
    out[documentHash(text)] = text;
  }
  return out;
}
