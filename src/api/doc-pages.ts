// The documents for agents (the llms.txt convention): where each is served and what it holds. The
// OpenAPI document's service routes and GET /llms.txt's link list are both made from this list.
export interface DocPage {
  path: string;
  title: string;
  /** One line: what a reader finds there. */
  summary: string;
  contentType: "text/plain" | "text/markdown";
}

export const LLMS_TXT: DocPage = {
  path: "/llms.txt",
  title: "llms.txt",
  summary: "What the service is, how to authenticate, the MCP tools and the REST routes, with links to the Markdown documents (the llms.txt convention).",
  contentType: "text/plain",
};

export const AUTH_PAGE: DocPage = {
  path: "/docs/auth.md",
  title: "Authentication and scopes",
  summary: "The token kinds and where each works, the scopes, and which routes and MCP tools need each scope.",
  contentType: "text/markdown",
};

export const MCP_PAGE: DocPage = {
  path: "/docs/mcp.md",
  title: "MCP tools",
  summary: "How to connect an MCP client to /mcp, and every tool with its arguments, scope and result.",
  contentType: "text/markdown",
};

export const API_PAGE: DocPage = {
  path: "/docs/api.md",
  title: "REST API reference",
  summary: "Every route with its parameters, scope, response shape and error statuses, and every record, in Markdown (rendered from the OpenAPI document).",
  contentType: "text/markdown",
};

/** The Markdown documents, in the order llms.txt lists them. */
export const MARKDOWN_PAGES: DocPage[] = [AUTH_PAGE, MCP_PAGE, API_PAGE];

export const DOC_PAGES: DocPage[] = [LLMS_TXT, ...MARKDOWN_PAGES];
