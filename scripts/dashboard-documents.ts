// Writes dashboard/trusted-documents.json from src/dashboard/operations.graphql: each operation,
// printed by graphql-js, keyed by the sha256 of that text (GraphQL Code Generator's
// persisted-documents format, which GCS_GRAPHQL_TRUSTED_DOCUMENTS reads). The dashboard page sends
// these texts as they are. Run: npx tsx scripts/dashboard-documents.ts
import { writeFileSync } from "node:fs";
import { dashboardDocuments } from "../src/dashboard/documents";
import { DASHBOARD_DOCUMENTS } from "../src/dashboard";

writeFileSync(DASHBOARD_DOCUMENTS, JSON.stringify(dashboardDocuments(), null, 2) + "\n");
console.log(`wrote ${DASHBOARD_DOCUMENTS}`);
