// GET /llms.txt and the Markdown documents it links to: for agents that read docs before they call.
// Rendered once per process (they depend on code only); no credential needed.
import type { Express } from "express";
import { API_PAGE, AUTH_PAGE, LLMS_TXT, MCP_PAGE, type DocPage } from "../api/doc-pages";
import { apiMarkdown, authMarkdown, llmsTxt, mcpMarkdown } from "./pages";

export { DOC_PAGES } from "../api/doc-pages";

const RENDERERS: [DocPage, () => string][] = [
  [LLMS_TXT, llmsTxt],
  [AUTH_PAGE, authMarkdown],
  [MCP_PAGE, mcpMarkdown],
  [API_PAGE, apiMarkdown],
];

export function mountDocs(app: Express): void {
  for (const [page, render] of RENDERERS) {
    const text = render();
    app.get(page.path, (_req, res) => {
      res.type(page.contentType).send(text);
    });
  }
}
