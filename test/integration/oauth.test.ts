// The MCP authorization flow end to end, against a real listening server: the MCP SDK's own client
// discovers the authorization server from the 401 of /mcp, registers itself, a person approves in
// headless Chromium by pasting group A's API key, the code comes back to a loopback callback, the
// client exchanges it (PKCE S256) and lists the tools. Then: the token's reach (/mcp only, one
// group), refresh rotation and replay, revocation, the refusals, and `gcs connectors`.
import { execFile } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import http, { type Server } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { promisify } from "node:util";
import type { BrowserContext } from "playwright-core";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError, type OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js";
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";
import { createApp, type App } from "../../src/app";
import { createApiKey, revokeApiKey } from "../../src/auth/credentials";
import { capturingLogger, startTestApp, type TestApp } from "../helpers/app";
import { launchChromium, type Chromium } from "../helpers/chromium";

const ROOT = path.resolve(__dirname, "../..");
const NODE = path.join(ROOT, "node_modules/.bin/node");

let t: TestApp;
const log = capturingLogger();
let app: App;
let server: Server;
let base: string;
let callback: Server;
let callbackUrl: string;
let chrome: Chromium | undefined;
let browser: BrowserContext;
/** The next request to the loopback callback, as its query parameters. */
let nextCallback: Promise<URLSearchParams>;
let deliver: (q: URLSearchParams) => void;
const expectCallback = () => (nextCallback = new Promise((resolve) => (deliver = resolve)));

beforeAll(async () => {
  t = await startTestApp({}, log.logger);
  // Listen first: the issuer and metadata URLs (GCS_PUBLIC_URL) name the real port.
  server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  app = await createApp({ ...t.services, config: { ...t.services.config, publicUrl: base } });
  server.on("request", app.handler);

  callback = http.createServer((req, res) => {
    const url = new URL(req.url!, "http://127.0.0.1");
    res.end("<!doctype html><title>done</title><p>You can close this window.</p>");
    if (url.pathname === "/callback") deliver(url.searchParams);
  });
  await new Promise<void>((resolve) => callback.listen(0, "127.0.0.1", resolve));
  callbackUrl = `http://127.0.0.1:${(callback.address() as AddressInfo).port}/callback`;

  chrome = await launchChromium();
  browser = chrome.browser;
}, 60_000);

afterAll(async () => {
  await chrome?.close();
  for (const s of [server, callback]) if (s) await new Promise((resolve) => s.close(resolve));
  await app?.stop();
  await t?.close();
});

/** A desktop client's OAuth state, in memory: what the SDK asks an application to keep. */
class TestClientProvider implements OAuthClientProvider {
  info?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  verifier = "";
  authorizationUrl?: URL;
  constructor(private readonly name = "Test Desktop") {}
  get redirectUrl() {
    return callbackUrl;
  }
  get clientMetadata(): OAuthClientMetadata {
    return { client_name: this.name, redirect_uris: [callbackUrl], grant_types: ["authorization_code", "refresh_token"], response_types: ["code"], token_endpoint_auth_method: "none" };
  }
  state() {
    return "state-" + randomBytes(8).toString("hex");
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(v: string) {
    this.verifier = v;
  }
  codeVerifier() {
    return this.verifier;
  }
}

/**
 * In Chromium: paste the key, continue, (untick scopes), approve; returns the callback's query.
 * The page is closed only once the callback page has loaded: a close that races the commit of a
 * cross-origin navigation (consent page → loopback callback) is acknowledged by Chromium and then
 * dropped, so page.close() would never return (crbug.com/536385539; playwright issue 41900).
 */
async function approveInBrowser(authorizationUrl: URL, apiKey: string, untick: string[] = []): Promise<URLSearchParams> {
  const page = await browser.newPage();
  try {
    expectCallback();
    await page.goto(authorizationUrl.href);
    await page.fill("#api_key", apiKey);
    await page.click("button[value=continue]");
    for (const scope of untick) await page.uncheck(`input[name=scope][value="${scope}"]`);
    await Promise.all([page.waitForURL((url) => url.href.startsWith(callbackUrl), { waitUntil: "load" }), page.click("button[value=approve]")]);
    return await nextCallback;
  } finally {
    await page.close();
  }
}

/** The SDK client's whole flow for one key: 401 → discovery → DCR → consent → code → tokens. */
async function connect(apiKey: string, name?: string) {
  const provider = new TestClientProvider(name);
  const first = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: provider });
  await expect(new Client({ name: "test", version: "1" }).connect(first)).rejects.toThrow(UnauthorizedError);
  expect(provider.authorizationUrl).toBeDefined();
  const returned = await approveInBrowser(provider.authorizationUrl!, apiKey);
  expect(returned.get("state")).toBe(provider.authorizationUrl!.searchParams.get("state"));
  const code = returned.get("code")!;
  await first.finishAuth(code);
  const client = new Client({ name: "test", version: "1" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: provider }));
  return { provider, client, tokens: provider.saved!, code };
}

const mcp = (token: string, method: string, params?: unknown) =>
  fetch(`${base}/mcp`, {
    method: "POST",
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });

const form = (url: string, fields: Record<string, string | string[]>) => {
  const body = new URLSearchParams();
  for (const [k, v] of Object.entries(fields)) for (const one of [v].flat()) body.append(k, one);
  return fetch(`${base}${url}`, { method: "POST", body, redirect: "manual" });
};

/** Property ids the token's MCP session sees through the list_properties tool. */
async function visibleProperties(token: string): Promise<string[]> {
  const res = await mcp(token, "tools/call", { name: "list_properties", arguments: {} });
  expect(res.status).toBe(200);
  const result = ((await res.json()) as { result: { structuredContent?: { data: { id: string }[] }; content: { text: string }[] } }).result;
  const page = result.structuredContent ?? JSON.parse(result.content[0].text);
  return page.data.map((p: { id: string }) => p.id);
}

const pkce = () => {
  const verifier = randomBytes(32).toString("base64url");
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") };
};

async function register(redirectUris = [callbackUrl], name = "Scripted client") {
  const res = await fetch(`${base}/register`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ client_name: name, redirect_uris: redirectUris, token_endpoint_auth_method: "none" }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, any> }; // eslint-disable-line @typescript-eslint/no-explicit-any
}

const authorizeUrl = (clientId: string, challenge: string, extra: Record<string, string> = {}) =>
  `${base}/authorize?${new URLSearchParams({ response_type: "code", client_id: clientId, redirect_uri: callbackUrl, code_challenge: challenge, code_challenge_method: "S256", state: "s1", ...extra })}`;

const formToken = (html: string) => /name="form_token" value="([^"]+)"/.exec(html)![1];

/** The consent steps over plain HTTP (no browser): returns the approve response. */
async function scriptedApproval(clientId: string, challenge: string, apiKey: string) {
  const page = await fetch(authorizeUrl(clientId, challenge));
  expect(page.status).toBe(200);
  const step2 = await form("/authorize/consent", { form_token: formToken(await page.text()), action: "continue", api_key: apiKey });
  expect(step2.status).toBe(200);
  const html = await step2.text();
  const scopes = [...html.matchAll(/name="scope" value="([^"]+)"/g)].map((m) => m[1]);
  const approveToken = formToken(html);
  return { approveToken, scopes, approve: () => form("/authorize/consent", { form_token: approveToken, action: "approve", scope: scopes }) };
}

const token = (fields: Record<string, string>) => form("/token", fields);

describe("MCP OAuth connector flow", () => {
  it("an SDK client connects through the 401, DCR, consent in Chromium and PKCE, and lists the tools", async () => {
    const unauthenticated = await fetch(`${base}/mcp`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(unauthenticated.status).toBe(401);
    expect(unauthenticated.headers.get("www-authenticate")).toBe(
      `Bearer resource_metadata="${base}/.well-known/oauth-protected-resource/mcp", realm="guest-context"`,
    );
    expect(((await unauthenticated.json()) as { error: string }).error).toBe("unauthorized");

    const apiKey = t.manifest.groups.A.credentials.api_key;
    const { client, tokens, code } = await connect(apiKey);
    const { tools } = await client.listTools();
    expect(tools.length).toBeGreaterThan(0);
    await client.close();

    expect(tokens.access_token).toMatch(/^gcsm_/);
    expect(tokens.refresh_token).toMatch(/^gcsmr_/);
    expect(tokens.expires_in).toBe(3600);
    expect(tokens.scope!.split(" ")).toEqual(expect.arrayContaining(["read:guests", "read:properties", "write:tables"]));
    // Stored hashed: neither secret appears in its table.
    const rows = await t.admin.$queryRawUnsafe<{ n: number }[]>(
      `SELECT (SELECT count(*) FROM mcp_tokens WHERE token_hash IN ($1, $2))::int + (SELECT count(*) FROM oauth_refresh_tokens WHERE token_hash IN ($1, $2))::int AS n`,
      tokens.access_token,
      tokens.refresh_token!,
    );
    expect(rows[0].n).toBe(0);

    // MCP only, as for every connector token.
    const rest = await fetch(`${base}/v1/guests?limit=1`, { headers: { Authorization: `Bearer ${tokens.access_token}` } });
    expect(rest.status).toBe(403);
    const graphql = await fetch(`${base}/graphql`, {
      method: "POST",
      headers: { Authorization: `Bearer ${tokens.access_token}`, "Content-Type": "application/json" },
      body: JSON.stringify({ query: "{ __typename }" }),
    });
    expect(graphql.status).toBe(403);
    // The refresh token is no bearer credential anywhere.
    expect((await mcp(tokens.refresh_token!, "tools/list")).status).toBe(401);

    // The approval is in the log by ids; no secret of the flow is.
    const logged = log.lines.join("\n");
    const approved = log.lines.map((l) => JSON.parse(l)).find((l) => l.msg === "connector approved");
    expect(approved).toMatchObject({ propertyGroupId: t.manifest.groups.A.id, clientId: expect.any(String), connector: expect.any(String) });
    for (const secret of [apiKey, code, tokens.access_token, tokens.refresh_token!]) expect(logged).not.toContain(secret);
  }, 60_000);

  it("scopes the token to the approving key's group and the ticked scopes", async () => {
    const { A, B } = t.manifest.groups;
    const a = await connect(A.credentials.api_key);
    const b = await connect(B.credentials.api_key);
    await a.client.close();
    await b.client.close();
    const seenByA = await visibleProperties(a.tokens.access_token);
    const seenByB = await visibleProperties(b.tokens.access_token);
    expect(seenByA.sort()).toEqual([...A.properties].sort());
    expect(seenByB.sort()).toEqual([...B.properties].sort());

    // Unticking read:properties on the consent page leaves it out of the token.
    const provider = new TestClientProvider();
    const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: provider });
    await expect(new Client({ name: "t", version: "1" }).connect(transport)).rejects.toThrow(UnauthorizedError);
    const returned = await approveInBrowser(provider.authorizationUrl!, A.credentials.api_key, ["read:properties"]);
    await transport.finishAuth(returned.get("code")!);
    expect(provider.saved!.scope!.split(" ")).not.toContain("read:properties");
    // Without the scope the tool answers an error (a tool error or a JSON-RPC error), not the data.
    const call = (await (await mcp(provider.saved!.access_token, "tools/call", { name: "list_properties", arguments: {} })).json()) as {
      result?: { isError?: boolean };
      error?: unknown;
    };
    expect(call.error !== undefined || call.result?.isError === true).toBe(true);
  }, 90_000);

  it("rotates refresh tokens; replaying a used one revokes the whole chain", async () => {
    const { provider, client, tokens } = await connect(t.manifest.groups.A.credentials.api_key);
    await client.close();
    const clientId = provider.info!.client_id;
    const first = await token({ grant_type: "refresh_token", client_id: clientId, refresh_token: tokens.refresh_token! });
    expect(first.status).toBe(200);
    const rotated = (await first.json()) as OAuthTokens;
    expect(rotated.refresh_token).not.toBe(tokens.refresh_token);
    expect(rotated.access_token).not.toBe(tokens.access_token);
    expect((await mcp(rotated.access_token, "tools/list")).status).toBe(200);

    // Widening on refresh is refused without spending the refresh token; narrowing is allowed.
    const wider = await token({ grant_type: "refresh_token", client_id: clientId, refresh_token: rotated.refresh_token!, scope: "read:everything" });
    expect(wider.status).toBe(400);
    expect(((await wider.json()) as { error: string }).error).toBe("invalid_scope");
    const narrower = await token({ grant_type: "refresh_token", client_id: clientId, refresh_token: rotated.refresh_token!, scope: "read:guests" });
    expect(narrower.status).toBe(200);
    const third = (await narrower.json()) as OAuthTokens;
    expect(third.scope).toBe("read:guests");

    const replay = await token({ grant_type: "refresh_token", client_id: clientId, refresh_token: tokens.refresh_token! });
    expect(replay.status).toBe(400);
    expect(((await replay.json()) as { error: string }).error).toBe("invalid_grant");
    // The chain is gone: the newest refresh token and every access token of the grant.
    expect((await token({ grant_type: "refresh_token", client_id: clientId, refresh_token: third.refresh_token! })).status).toBe(400);
    expect((await mcp(third.access_token, "tools/list")).status).toBe(401);
    expect((await mcp(rotated.access_token, "tools/list")).status).toBe(401);
    expect((await mcp(tokens.access_token, "tools/list")).status).toBe(401);
  }, 60_000);

  it("ends a connector at its next refresh once the API key that approved it is revoked", async () => {
    const { A } = t.manifest.groups;
    const key = await createApiKey(t.admin, { propertyGroupId: A.id, propertyId: null, name: "leaves soon", scopes: ["read:guests"] });
    const { provider, client, tokens } = await connect(key.token);
    await client.close();
    expect(await revokeApiKey(t.admin, key.id)).toBe(true);
    const refreshed = await token({ grant_type: "refresh_token", client_id: provider.info!.client_id, refresh_token: tokens.refresh_token! });
    expect(refreshed.status).toBe(400);
    expect(((await refreshed.json()) as { error: string }).error).toBe("invalid_grant");
    expect((await mcp(tokens.access_token, "tools/list")).status).toBe(401);
  }, 60_000);

  it("revokes access and refresh tokens at /revoke, only for their own client", async () => {
    const { provider, client, tokens } = await connect(t.manifest.groups.A.credentials.api_key);
    await client.close();
    const clientId = provider.info!.client_id;
    const other = await register();
    // Another client cannot revoke this client's token (200, nothing happens: RFC 7009).
    expect((await form("/revoke", { client_id: other.body.client_id, token: tokens.access_token })).status).toBe(200);
    expect((await mcp(tokens.access_token, "tools/list")).status).toBe(200);

    expect((await form("/revoke", { client_id: clientId, token: tokens.access_token })).status).toBe(200);
    expect((await mcp(tokens.access_token, "tools/list")).status).toBe(401);
    const refreshed = await token({ grant_type: "refresh_token", client_id: clientId, refresh_token: tokens.refresh_token! });
    expect(refreshed.status).toBe(200);
    const next = (await refreshed.json()) as OAuthTokens;

    expect((await form("/revoke", { client_id: clientId, token: next.refresh_token! })).status).toBe(200);
    expect((await mcp(next.access_token, "tools/list")).status).toBe(401);
    expect((await token({ grant_type: "refresh_token", client_id: clientId, refresh_token: next.refresh_token! })).status).toBe(400);
  }, 60_000);

  it("publishes RFC 9728 and RFC 8414 metadata", async () => {
    for (const p of ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"]) {
      const res = await fetch(`${base}${p}`);
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ resource: `${base}/mcp`, authorization_servers: [`${base}/`] });
    }
    const as = (await (await fetch(`${base}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>;
    expect(as).toMatchObject({
      issuer: `${base}/`,
      authorization_endpoint: `${base}/authorize`,
      token_endpoint: `${base}/token`,
      registration_endpoint: `${base}/register`,
      revocation_endpoint: `${base}/revoke`,
      code_challenge_methods_supported: ["S256"],
      token_endpoint_auth_methods_supported: ["none"],
      grant_types_supported: ["authorization_code", "refresh_token"],
    });
  });

  it("refuses a redirect URI that is not registered exactly, and unsafe ones at registration", async () => {
    const { body } = await register();
    expect(body.client_secret).toBeUndefined();
    const { challenge } = pkce();
    const otherPort = callbackUrl.replace(/:(\d+)\//, (_m, p) => `:${Number(p) + 1}/`);
    for (const uri of [otherPort, `${callbackUrl}/x`, `${callbackUrl}?a=1`]) {
      const res = await fetch(authorizeUrl(body.client_id, challenge, { redirect_uri: uri }), { redirect: "manual" });
      expect(res.status).toBe(400);
      expect(res.headers.get("location")).toBeNull();
    }
    // Also when the rest of the request is wrong too: no error redirect to the other port either.
    const noChallenge = `${base}/authorize?${new URLSearchParams({ response_type: "code", client_id: body.client_id, redirect_uri: otherPort, state: "s1" })}`;
    for (const res of [await fetch(noChallenge, { redirect: "manual" }), await form(`/authorize`, Object.fromEntries(new URL(noChallenge).searchParams))]) {
      expect(res.status).toBe(400);
      expect(res.headers.get("location")).toBeNull();
    }
    for (const uri of ["http://evil.example/cb", "javascript:alert(1)", "https://ok.example/cb#frag", "https://ok.example/cb#"]) {
      const refused = await register([uri]);
      expect(refused.status).toBe(400);
      expect(refused.body.error).toBe("invalid_redirect_uri");
    }
    expect((await register(undefined, "nul\u0000name")).status).toBe(400); // not a 500 from the insert
  });

  it("accepts PKCE S256 only, and a code once, for the right verifier", async () => {
    const { body } = await register();
    const { verifier, challenge } = pkce();
    const plain = await fetch(authorizeUrl(body.client_id, verifier, { code_challenge_method: "plain" }), { redirect: "manual" });
    expect(plain.status).toBe(302);
    expect(new URL(plain.headers.get("location")!).searchParams.get("error")).toBe("invalid_request");
    const none = await fetch(authorizeUrl(body.client_id, "").replace(/&code_challenge=[^&]*&code_challenge_method=S256/, ""), { redirect: "manual" });
    expect(new URL(none.headers.get("location")!).searchParams.get("error")).toBe("invalid_request");

    const malformed = await fetch(authorizeUrl(body.client_id, "too-short"), { redirect: "manual" });
    expect(new URL(malformed.headers.get("location")!).searchParams.get("error")).toBe("invalid_request");

    const approval = await scriptedApproval(body.client_id, challenge, t.manifest.groups.A.credentials.api_key);
    const approved = await approval.approve();
    expect(approved.status).toBe(303);
    const location = new URL(approved.headers.get("location")!);
    expect(`${location.origin}${location.pathname}`).toBe(callbackUrl);
    expect(location.searchParams.get("state")).toBe("s1");
    const code = location.searchParams.get("code")!;

    // The same form cannot issue a second code.
    expect((await approval.approve()).status).toBe(409);

    const exchange = (code_verifier: string) =>
      token({ grant_type: "authorization_code", client_id: body.client_id, code, code_verifier, redirect_uri: callbackUrl });
    const wrong = await exchange(pkce().verifier);
    expect(wrong.status).toBe(400);
    expect(((await wrong.json()) as { error: string }).error).toBe("invalid_grant");
    const right = await exchange(verifier);
    expect(right.status).toBe(200);
    const tokens = (await right.json()) as OAuthTokens;
    expect((await mcp(tokens.access_token, "tools/list")).status).toBe(200);
    // A replayed code fails and takes the tokens issued for it along.
    expect((await exchange(verifier)).status).toBe(400);
    expect((await mcp(tokens.access_token, "tools/list")).status).toBe(401);
  });

  it("proves the person with a real, unpinned, live API key; denial and tampering go nowhere", async () => {
    const { A } = t.manifest.groups;
    const { body } = await register(undefined, `<script>alert("x")</script> & co`);
    const { challenge } = pkce();
    const page = await fetch(authorizeUrl(body.client_id, challenge));
    const html = await page.text();
    expect(page.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    expect(html).not.toContain("<script>");
    expect(html).toContain("&#60;script&#62;alert(&#34;x&#34;)&#60;/script&#62; &#38; co");
    expect(html).toContain(new URL(callbackUrl).host);
    const start = formToken(html);

    for (const key of ["gcs_not-a-key", t.manifest.revoked_api_key, A.credentials.api_key_pinned.token, A.credentials.mcp_token, A.credentials.session_token, ""]) {
      const res = await form("/authorize/consent", { form_token: start, action: "continue", api_key: key });
      expect(res.status).toBe(401);
      expect(await res.text()).not.toContain('value="approve"');
    }
    // A tampered form token is refused outright.
    const [data, mac] = start.split(".");
    const forged = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(data, "base64url").toString()), redirectUri: "https://evil.example/" })).toString("base64url");
    const tampered = await form("/authorize/consent", { form_token: `${forged}.${mac}`, action: "deny" });
    expect(tampered.status).toBe(400);
    expect(tampered.headers.get("location")).toBeNull();

    // A key holding read:guests only is offered read:guests only.
    const limited = await form("/authorize/consent", { form_token: start, action: "continue", api_key: A.credentials.api_key_limited });
    expect([...(await limited.text()).matchAll(/name="scope" value="([^"]+)"/g)].map((m) => m[1])).toEqual(["read:guests"]);

    const denied = await form("/authorize/consent", { form_token: start, action: "deny" });
    expect(denied.status).toBe(303);
    const to = new URL(denied.headers.get("location")!);
    expect(to.searchParams.get("error")).toBe("access_denied");
    expect(to.searchParams.get("state")).toBe("s1");
    expect(to.searchParams.get("code")).toBeNull();
  });

  it("gcs connectors list shows connectors without secrets; revoke ends their tokens", async () => {
    const { A } = t.manifest.groups;
    const { provider, client, tokens } = await connect(A.credentials.api_key, "CLI test client");
    await client.close();
    const run = promisify(execFile);
    const gcs = (args: string[]) =>
      run(NODE, [path.join(ROOT, "bin/gcs.js"), ...args], { cwd: ROOT, env: { ...process.env, DATABASE_URL: t.databaseUrl, LOG_LEVEL: "silent" }, timeout: 120_000 });

    const listed = await gcs(["connectors", "list", "--group", A.id, "--json"]);
    const rows = JSON.parse(listed.stdout) as { id: string; client_id: string; client_name: string; property_group_id: string; revoked_at: string | null }[];
    const mine = rows.find((r) => r.client_id === provider.info!.client_id)!;
    expect(mine).toMatchObject({ client_name: "CLI test client", property_group_id: A.id, revoked_at: null });
    expect(rows.every((r) => r.property_group_id === A.id)).toBe(true);
    const text = (await gcs(["connectors", "list"])).stdout;
    expect(text).toContain(mine.id);
    for (const out of [listed.stdout, text]) expect(out).not.toMatch(/gcsmr?_|gcs_[A-Za-z0-9_-]{20}/);

    expect(JSON.parse((await gcs(["connectors", "revoke", mine.id, "--json"])).stdout)).toEqual({ id: mine.id, revoked: true });
    expect((await mcp(tokens.access_token, "tools/list")).status).toBe(401);
    expect((await token({ grant_type: "refresh_token", client_id: provider.info!.client_id, refresh_token: tokens.refresh_token! })).status).toBe(400);
    await expect(gcs(["connectors", "revoke", mine.id])).rejects.toMatchObject({ code: 1, stderr: expect.stringContaining(`no active connector ${mine.id}`) });
    await expect(gcs(["connectors", "list", "--group", "nope"])).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining("--group must be a uuid") });
  }, 120_000);
});
