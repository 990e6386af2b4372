// docs/api.md is generated from the route table (scripts/docs-api.ts, `npm run docs:api`): it fails
// here when the committed file differs from what the route table and its prose generate.
import { readFileSync } from "node:fs";
import { API_DOC_PATH, renderApiDoc } from "../../scripts/docs-api";
import { routes } from "../../src/api/routes";
import { routeKey } from "../../src/api/openapi/generate";

describe("docs/api.md", () => {
  it("is what `npm run docs:api` generates from the route table", () => {
    expect(readFileSync(API_DOC_PATH, "utf8")).toBe(renderApiDoc());
  });

  it("names every route of the route table with its scope", () => {
    const text = readFileSync(API_DOC_PATH, "utf8");
    for (const route of routes) expect(text).toContain(`**\`${routeKey(route)}\`** (\`${route.scope}\``);
  });
});
