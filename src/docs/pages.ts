// The documents for agents, rendered from the code so they cannot drift: routes, parameters, scopes
// and response shapes from the OpenAPI document (itself generated from the route table), the MCP
// tools from documentedMcpTools(), scopes and roles from src/auth. Hand-written prose here is only
// what no table says: what the service is and how to connect.
import { ROLE_SCOPES, ALL_SCOPES } from "../auth/scopes";
import { ACCESS_TOKEN_TTL_S, API_KEY_PREFIX, MCP_TOKEN_PREFIX, PARTNER_TOKEN_PREFIX, REFRESH_TOKEN_PREFIX, REFRESH_TOKEN_TTL_S, STATIC_TOKEN_PREFIX } from "../auth/secrets";
import { openApiDocument } from "../api/openapi";
import { API_PAGE, AUTH_PAGE, LLMS_TXT, MARKDOWN_PAGES, MCP_PAGE, type DocPage } from "../api/doc-pages";
import { documentedMcpTools, type DocumentedTool } from "./mcp-tools";

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const SERVICE = "Guest Context Service";
/** The auth.md section on the OAuth flow; llms.txt and mcp.md link to it. */
const CONNECTORS_HEADING = "MCP connectors (OAuth)";

/** The document's `info`: title, summary, version and the Markdown description. */
const info = () => openApiDocument().info as { title: string; summary: string; version: string; description: string };

/** GitHub's heading anchors: lower case, punctuation dropped, spaces become hyphens. */
export function slug(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

export interface Operation {
  method: string;
  path: string;
  /** "GET /v1/guests/{id}": also the route's heading in api.md. */
  key: string;
  op: Json;
  /** The scope it needs; undefined when no credential is needed. */
  scope?: string;
}

/** Every operation of the OpenAPI document, in document order. */
export function operations(): Operation[] {
  return Object.entries(openApiDocument().paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]) => ({
      method: method.toUpperCase(),
      path,
      key: `${method.toUpperCase()} ${path}`,
      op,
      scope: op["x-required-scope"] as string | undefined,
    })),
  );
}

export const routeLink = (key: string) => `${API_PAGE.path}#${slug(key)}`;
export const toolLink = (name: string) => `${MCP_PAGE.path}#${slug(name)}`;

const code = (s: unknown) => `\`${String(s)}\``;
/** A table cell: one line, pipes escaped (also inside code spans, as GFM tables require). */
const cell = (s: string) => s.replace(/\s*\n\s*/g, " ").replace(/\|/g, "\\|");
const table = (head: string[], rows: string[][]) =>
  [`| ${head.join(" | ")} |`, `|${head.map(() => "---").join("|")}|`, ...rows.map((r) => `| ${r.map(cell).join(" | ")} |`)].join("\n");

const otherDocs = (self: DocPage) =>
  "Other documents: " +
  [LLMS_TXT, ...MARKDOWN_PAGES]
    .filter((p) => p !== self)
    .map((p) => `[${p.title}](${p.path})`)
    .concat("[OpenAPI document](/openapi.json)", "[HTML reference](/docs)")
    .join(" · ");

/**
 * A JSON Schema as a short type: `string (uuid) | null`, `Guest[]`, `{ data: Guest }`. Named
 * records link to their section of api.md.
 */
export function typeText(schema: Json | undefined, depth = 0): string {
  if (!schema) return "any";
  if (typeof schema.$ref === "string") {
    const name = schema.$ref.split("/").pop()!;
    return `[${name}](${API_PAGE.path}#${slug(name)})`;
  }
  if (schema.const !== undefined) return code(JSON.stringify(schema.const));
  if (Array.isArray(schema.enum)) return schema.enum.map((v: unknown) => code(v)).join(" | ");
  const alternatives = schema.oneOf ?? schema.anyOf;
  if (Array.isArray(alternatives)) return alternatives.map((s: Json) => typeText(s, depth)).join(" | ");
  if (Array.isArray(schema.allOf) && schema.allOf.length === 1) return typeText(schema.allOf[0], depth);
  const types: string[] = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : [];
  if (types.length === 0) return "any JSON";
  return types.map((type) => scalarText(type, schema, depth)).join(" | ");
}

function scalarText(type: string, schema: Json, depth: number): string {
  if (type === "array") {
    const item = typeText(schema.items, depth);
    return item.includes(" | ") ? `(${item})[]` : `${item}[]`;
  }
  if (type === "object") {
    const properties = Object.entries((schema.properties ?? {}) as Record<string, Json>);
    if (properties.length === 0 || depth > 0) return "object";
    const required = new Set<string>(schema.required ?? []);
    return `{ ${properties.map(([name, s]) => `${name}${required.has(name) ? "" : "?"}: ${typeText(s, depth + 1)}`).join(", ")} }`;
  }
  const notes: string[] = [];
  if (schema.format) notes.push(schema.format);
  if (schema.minimum !== undefined && schema.maximum !== undefined) notes.push(`${schema.minimum}–${schema.maximum}`);
  else if (schema.minimum !== undefined) notes.push(`≥ ${schema.minimum}`);
  return notes.length ? `${type} (${notes.join(", ")})` : type;
}

/** The description, plus the default when the prose does not already state it. */
const withDefault = (description: string, schema: Json | undefined) =>
  schema?.default !== undefined && !/\bdefault\b/i.test(description) ? `${description} Default ${code(schema.default)}.` : description;

// ---------------------------------------------------------------------------------------------
// /llms.txt

export function llmsTxt(): string {
  const ops = operations();
  const link = (p: DocPage) => `- [${p.title}](${p.path}): ${p.summary}`;
  const opLine = (o: Operation) => `- [${o.key}](${routeLink(o.key)}): ${o.op.summary}. ${o.scope ? `Scope ${code(o.scope)}.` : "No credential."}`;
  return [
    `# ${SERVICE}`,
    "",
    `> ${info().summary} Guest profiles, identity-resolved master profiles, stays, spend, consent, reviews, loyalty, ` +
      "tables and the event history across every property of a group, for AI agents (MCP at `/mcp`) and programs (REST at `/v1`).",
    "",
    "Every answer is scoped to the caller's property group. Authenticate with `Authorization: Bearer <token>`: a personal " +
      `API key (\`${API_KEY_PREFIX}…\`) works on \`/v1\`, \`/graphql\` and \`/mcp\`; an MCP connector token (\`${MCP_TOKEN_PREFIX}…\`) ` +
      `on \`/mcp\` only, issued through the MCP OAuth flow (a client that supports MCP authorization needs only the \`/mcp\` URL; ` +
      `see [${CONNECTORS_HEADING}](${AUTH_PAGE.path}#${slug(CONNECTORS_HEADING)})); a partner token (\`${PARTNER_TOKEN_PREFIX}…\`) on \`/v1\` only. Each route and tool needs one scope ` +
      `(\`read:<area>\` or \`write:<area>\`); a missing scope is \`403 { "error": "forbidden", "scope": … }\`. See [${AUTH_PAGE.title}](${AUTH_PAGE.path}).`,
    "",
    `AI agents: connect an MCP client to \`POST /mcp\` (streamable HTTP, stateless, JSON responses) with that header; see [${MCP_PAGE.title}](${MCP_PAGE.path}). ` +
      "Lists, from tools and REST alike, are pages `{ data, next_cursor, has_more }`: send `next_cursor` back as `cursor`. " +
      "Errors are `{ error, scope?, detail? }` (on MCP, a tool result with `isError`), so a bad argument can be corrected. " +
      "Consent: withdrawn or denied beat granted, and no observation means unknown, never allowed. `/graphql` serves the " +
      "same data as GraphQL (`schema.graphql`) for dashboards. These documents need no credential.",
    "",
    "## Docs",
    "",
    ...MARKDOWN_PAGES.map(link),
    "- [OpenAPI document](/openapi.json): The OpenAPI 3.1 document (JSON) of `/v1` and the service routes; the REST reference is rendered from it.",
    "",
    "## MCP tools",
    "",
    ...documentedMcpTools().map((t) => `- [${t.name}](${toolLink(t.name)}): ${t.description} Scope ${t.standsFor ? `each type's (${t.scope})` : code(t.scope)}.`),
    "",
    "## REST routes",
    "",
    ...ops.filter((o) => o.scope).map(opLine),
    "",
    "## Optional",
    "",
    "- [HTML reference](/docs): The same reference for people, rendered in a browser.",
    ...ops.filter((o) => !o.scope).map(opLine),
    "",
  ].join("\n");
}

// ---------------------------------------------------------------------------------------------
// /docs/auth.md

/** One `## Heading` section of the OpenAPI description's Markdown, without its heading. */
function infoSection(heading: string): string {
  const description = info().description;
  const start = description.indexOf(`## ${heading}\n`);
  if (start < 0) throw new Error(`the OpenAPI description has no section "## ${heading}"`);
  const body = description.slice(start + heading.length + 4);
  const end = body.indexOf("\n## ");
  return (end < 0 ? body : body.slice(0, end)).trim();
}

export function authMarkdown(): string {
  const ops = operations();
  const tools = documentedMcpTools();
  const scopeRows = ALL_SCOPES.map((scope) => [
    code(scope),
    ops.filter((o) => o.scope === scope).map((o) => `[${o.key}](${routeLink(o.key)})`).join(", ") || "none",
    tools
      .flatMap((t) => {
        if (!t.standsFor) return t.scope === scope ? [`[${t.name}](${toolLink(t.name)})`] : [];
        const types = t.standsFor.filter((s) => s.tool.scope === scope).map((s) => code(s.type));
        return types.length ? [`[${t.name}](${toolLink(t.name)}) (type ${types.join(", ")})`] : [];
      })
      .join(", ") || "none",
  ]);
  return [
    `# ${AUTH_PAGE.title}`,
    "",
    `> How to authenticate to the ${SERVICE} (\`/v1\`, \`/graphql\`, \`/mcp\`), and which scope each route and MCP tool needs.`,
    "",
    otherDocs(AUTH_PAGE),
    "",
    infoSection("Authentication and scope"),
    "",
    "## Token kinds",
    "",
    table(
      ["Token", "Looks like", "Where it works"],
      [
        ["Personal API key", `\`${API_KEY_PREFIX}…\``, "`/v1`, `/graphql`, `/mcp`. Recommended for programs and MCP clients. Can be pinned to one property."],
        ["Partner access token", `\`${PARTNER_TOKEN_PREFIX}…\``, "`/v1` only; elsewhere 403 `forbidden`."],
        ["Web-app session JWT", "`eyJ…`", "`/v1`, `/graphql`; `/mcp` answers 403 `mcp_oauth_required`. May not send `X-Property-Id`."],
        ["Static token", `\`${STATIC_TOKEN_PREFIX}…\` or any configured value`, "`/v1`, `/graphql`, `/mcp`. Configured by the operator."],
        ["MCP connector token", `\`${MCP_TOKEN_PREFIX}…\``, "`/mcp` only; `/v1` and `/graphql` answer 403 `forbidden`."],
      ],
    ),
    "",
    "Tokens are 256-bit random values, stored only as SHA-256 hashes and shown once, at creation. Send them in the " +
      "`Authorization` header only, never in a URL. A missing, unknown, revoked or expired token is `401 unauthorized`.",
    "",
    ...connectorsSection(),
    "",
    "## Scopes",
    "",
    table(["Scope", "REST routes", "MCP tools"], scopeRows),
    "",
    "## Session roles",
    "",
    table(
      ["Role", "Scopes"],
      Object.entries(ROLE_SCOPES).map(([role, scopes]) => [code(role), scopes.length === ALL_SCOPES.length ? "every scope" : scopes.map(code).join(", ")]),
    ),
    "",
    "## Without a credential",
    "",
    ...ops.filter((o) => !o.scope).map((o) => `- [${o.key}](${routeLink(o.key)}): ${o.op.summary}.`),
    "",
  ].join("\n");
}

/** Token lifetimes in words: whole days, else hours. */
const lifetime = (s: number) => (s >= 86_400 ? `${s / 86_400} days` : s === 3600 ? "1 hour" : `${s / 3600} hours`);

/** How an AI client gets a connector token: the MCP authorization flow (src/oauth). */
function connectorsSection(): string[] {
  return [
    `## ${CONNECTORS_HEADING}`,
    "",
    "Desktop and web AI clients (Claude, VS Code, Cursor, the MCP Inspector) connect through the MCP authorization flow " +
      "(OAuth 2.1) instead of a pasted key: give the client the URL of `/mcp` on this service and nothing else.",
    "",
    "1. The client calls `POST /mcp` without a token and gets `401` with " +
      '`WWW-Authenticate: Bearer resource_metadata="<origin>/.well-known/oauth-protected-resource/mcp"`.',
    "2. It reads that protected resource metadata (RFC 9728; also at `/.well-known/oauth-protected-resource`) and the " +
      "authorization server metadata at `/.well-known/oauth-authorization-server` (RFC 8414), then registers itself at " +
      "`POST /register` (RFC 7591 dynamic client registration; public clients, no client secret).",
    "3. It opens `GET /authorize` in the browser: authorization code with PKCE, `S256` only; the `redirect_uri` must equal " +
      "one the client registered, character for character (HTTPS, an app's own scheme, or `http` to a loopback address).",
    "4. On the consent page a person of the property group proves who they are by pasting an API key of the group " +
      `(\`${API_KEY_PREFIX}…\`, not pinned to a property; it is checked, not stored, and never shown to the client). The page then ` +
      "shows the client's name, where it sends the person back to, and the scopes the client asked for that the key holds; " +
      "the person unticks what the client should not have, then approves or denies.",
    `5. The client exchanges the code at \`POST /token\` for an access token \`${MCP_TOKEN_PREFIX}…\` (valid ${lifetime(ACCESS_TOKEN_TTL_S)}) and a ` +
      `refresh token \`${REFRESH_TOKEN_PREFIX}…\` (valid ${lifetime(REFRESH_TOKEN_TTL_S)}, single use: each refresh returns a new pair, and ` +
      "presenting a spent one again revokes the whole connector).",
    "",
    "The access token reads the approving key's property group with the approved scopes, on `/mcp` only (`/v1` and " +
      "`/graphql` answer 403 `forbidden`). The client revokes its tokens at `POST /revoke` (RFC 7009; revoking the refresh " +
      "token ends the connector); an operator lists connectors with `gcs connectors list [--group <uuid>] [--json]` and " +
      "ends one with `gcs connectors revoke <id>`. Revoking the API key that approved a connector ends the connector at its " +
      "next refresh. The service's public origin in these URLs is `GCS_PUBLIC_URL`.",
  ];
}

// ---------------------------------------------------------------------------------------------
// /docs/mcp.md

function toolSection(tool: DocumentedTool): string {
  const facts = [
    tool.route ? `Answers like [${tool.route.method} ${tool.route.path}](${routeLink(`${tool.route.method} ${tool.route.path}`)}).` : "",
    tool.standsFor ? `Scope: each type's (${tool.scope}).` : `Scope ${code(tool.scope)}.`,
    tool.readOnly ? "Read-only." : "Writes.",
  ].filter(Boolean);
  const standsFor = tool.standsFor
    ? [
        "",
        "It stands for these tools, which still answer under their names (unlisted):",
        "",
        table(
          ["Type", "Tool", "Answers like", "Scope"],
          tool.standsFor.map(({ type, tool: t }) => [
            code(type),
            code(t.name),
            t.route ? `[${t.route.method} ${t.route.path}](${routeLink(`${t.route.method} ${t.route.path}`)})` : "",
            code(t.scope),
          ]),
        ),
      ]
    : [];
  const args = tool.arguments.length
    ? table(
        ["Argument", "Type", "Required", "Description"],
        tool.arguments.map((a) => [code(a.name), typeText(a.schema), a.required ? "yes" : "no", withDefault(a.description, a.schema)]),
      )
    : "No arguments.";
  return [`### ${tool.name}`, "", tool.description, "", facts.join(" "), ...standsFor, "", args, ""].join("\n");
}

export function mcpMarkdown(): string {
  return [
    `# ${MCP_PAGE.title}`,
    "",
    `> The ${SERVICE}'s MCP server: tools over a hotel or restaurant group's guest data, with the same credentials, ` +
      "scopes and page shapes as the REST API.",
    "",
    otherDocs(MCP_PAGE),
    "",
    "## Connecting",
    "",
    "- Endpoint: `POST /mcp` on this service. Streamable HTTP, stateless (no session; `GET` and `DELETE` answer 405), JSON responses.",
    `- Credential: \`Authorization: Bearer <token>\` with a personal API key (\`${API_KEY_PREFIX}…\`), a static token or an MCP ` +
      `connector token (\`${MCP_TOKEN_PREFIX}…\`); see [${AUTH_PAGE.title}](${AUTH_PAGE.path}). No credential: 401. A partner token: 403. ` +
      "A web-app session: 403 `mcp_oauth_required`.",
    "- OAuth: a client that supports MCP authorization (Claude, VS Code, Cursor, the MCP Inspector) needs only this " +
      "server's `/mcp` URL. The 401 names the protected resource metadata; the client registers itself, a person of the " +
      `group approves it on the consent page with an API key of the group, and it gets a \`${MCP_TOKEN_PREFIX}…\` token; see ` +
      `[${CONNECTORS_HEADING}](${AUTH_PAGE.path}#${slug(CONNECTORS_HEADING)}).`,
    "- `X-Property-Id: <uuid>` narrows every tool to one property of the group, as on REST.",
    "- A tool needs the scope named below; without it the tool result is an error `{ \"error\": \"forbidden\", \"scope\": … }`.",
    "- A tool that answers like a REST route returns that route's JSON body. Lists are pages `{ data, next_cursor, has_more }`: " +
      "send `next_cursor` back as `cursor` for the next page. Errors are tool results with `isError: true` and the REST error " +
      "body `{ error, scope?, detail? }`, so a bad argument can be corrected and retried.",
    "",
    "## Tools",
    "",
    ...documentedMcpTools().map(toolSection),
  ].join("\n");
}

// ---------------------------------------------------------------------------------------------
// /docs/api.md

const resolve = (node: Json, doc: Json): Json =>
  typeof node.$ref === "string" ? node.$ref.slice(2).split("/").reduce((at: Json, part: string) => at[part], doc) : node;

function operationSection(o: Operation, doc: Json, toolsByRoute: Map<string, { tool: DocumentedTool; type?: string }>): string {
  const op = o.op;
  const mcp = toolsByRoute.get(o.key);
  const facts = [
    o.scope ? `Scope ${code(o.scope)}.` : "No credential needed.",
    mcp ? `MCP tool [${mcp.tool.name}](${toolLink(mcp.tool.name)})${mcp.type ? ` with type ${code(mcp.type)}` : ""}.` : "",
  ].filter(Boolean);
  // The route's own parameters; the shared headers ($ref) are described once, under Routes.
  const parameters = ((op.parameters ?? []) as Json[]).filter((p) => !p.$ref);
  const paramTable = parameters.length
    ? table(
        ["Parameter", "In", "Type", "Required", "Description"],
        parameters.map((p) => [code(p.name), p.in, typeText(p.schema), p.required ? "yes" : "no", withDefault(String(p.description ?? ""), p.schema)]),
      )
    : "No parameters.";
  const bodySchema = op.requestBody?.content?.["application/json"]?.schema as Json | undefined;
  const body = bodySchema
    ? [
        "",
        "Body (`application/json`; unknown members are a 400):",
        "",
        table(
          ["Member", "Type", "Required", "Description"],
          Object.entries(bodySchema.properties as Record<string, Json>).map(([name, s]) => [
            code(name),
            typeText(s),
            ((bodySchema.required ?? []) as string[]).includes(name) ? "yes" : "no",
            withDefault(String(s.description ?? ""), s),
          ]),
        ),
      ]
    : [];
  // The success answer: 200, or the webhook routes' 201 (create) and 204 (delete).
  const okStatus = Object.keys(op.responses as Record<string, Json>).find((s) => /^2\d\d$/.test(s)) ?? "200";
  const ok = op.responses[okStatus] as Json;
  const [mediaType, media] = Object.entries((ok.content ?? {}) as Record<string, Json>)[0] ?? [];
  const errors = Object.entries(op.responses as Record<string, Json>)
    .filter(([status]) => status !== okStatus)
    .map(([status, r]) => (r.$ref ? `[${status}](#${slug(status)})` : `${status} (${cell(String(r.description))})`));
  return [
    `#### ${o.key}`,
    "",
    `**${op.summary}.** ${String(op.description).replace(/\n\nRequires the scope `[^`]+`\.$/, "")}`,
    "",
    facts.join(" "),
    "",
    paramTable,
    ...body,
    "",
    `Answer \`${okStatus}\`${mediaType ? ` (\`${mediaType}\`)` : ""}: ${ok.description} Type: ${media ? typeText(media.schema) : "none"}.`,
    "",
    ...(errors.length ? [`Errors: ${errors.join(", ")}.`, ""] : []),
  ].join("\n");
}

function recordSection(name: string, schema: Json): string {
  const required = new Set<string>(schema.required ?? []);
  const members = Object.entries((schema.properties ?? {}) as Record<string, Json>);
  const rows = members.map(([member, s]) => [code(member), typeText(s), required.has(member) ? "yes" : "no", String(s.description ?? "")]);
  return [`### ${name}`, "", String(schema.description ?? ""), "", rows.length ? table(["Member", "Type", "Always present", "Description"], rows) : typeText(schema), ""].join("\n");
}

export function apiMarkdown(): string {
  const doc = openApiDocument() as Json;
  const ops = operations();
  // A route's tool: its own, or the merged tool that stands for it, with the type.
  const toolsByRoute = new Map<string, { tool: DocumentedTool; type?: string }>();
  for (const tool of documentedMcpTools()) {
    for (const { type, tool: member } of tool.standsFor ?? [{ type: undefined, tool }]) {
      if (member.route) toolsByRoute.set(`${member.route.method} ${member.route.path}`, { tool, type });
    }
  }
  const tags = (doc.tags as { name: string; description: string }[]).filter((t) => ops.some((o) => o.op.tags?.[0] === t.name));
  // Error statuses: the shared response components, by the status that refers to them.
  const errorStatuses = new Map<string, Json>();
  for (const o of ops) {
    for (const [status, r] of Object.entries(o.op.responses as Record<string, Json>)) if (r.$ref) errorStatuses.set(status, resolve(r, doc));
  }
  return [
    `# ${doc.info.title}: ${API_PAGE.title}`,
    "",
    `> ${doc.info.summary} Version ${doc.info.version}. Rendered from the OpenAPI document at [/openapi.json](/openapi.json).`,
    "",
    otherDocs(API_PAGE),
    "",
    String(doc.info.description),
    "",
    "## Routes",
    "",
    "Besides its own parameters, every route takes these headers:",
    "",
    table(
      ["Header", "Type", "Description"],
      Object.values(doc.components.parameters as Record<string, Json>).map((p) => [code(p.name), typeText(p.schema), String(p.description)]),
    ),
    "",
    ...tags.flatMap((t) => [`### ${t.name}`, "", t.description, "", ...ops.filter((o) => o.op.tags?.[0] === t.name).map((o) => operationSection(o, doc, toolsByRoute))]),
    "## Error statuses",
    "",
    ...[...errorStatuses.entries()]
      .sort(([a], [b]) => Number(a) - Number(b))
      .flatMap(([status, r]) => [`### ${status}`, "", String(r.description), ""]),
    "## Records",
    "",
    ...Object.entries(doc.components.schemas as Record<string, Json>).map(([name, schema]) => recordSection(name, schema)),
  ].join("\n");
}
