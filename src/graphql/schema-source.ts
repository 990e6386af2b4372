// Where the GraphQL contract lives on disk.
import { readFileSync } from "node:fs";
import path from "node:path";

export const SCHEMA_PATH = path.resolve(__dirname, "../../schema.graphql");

export function loadTypeDefs(): string {
  return readFileSync(SCHEMA_PATH, "utf8");
}
