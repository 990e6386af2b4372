// The consent page of the authorization endpoint, server-rendered. How the person proves who they
// are: they paste an API key of their property group (`gcs_…`, unpinned), which the service checks
// with the same authentication code as every API request. Only then are the requested scopes shown,
// limited to those the key holds, to approve or deny.
//
// Two steps, each a POST of a signed form token (HMAC-SHA256 with a service secret) that carries the
// authorization request, so nothing about it can be altered between pages: step 1 (identify) takes
// the key, step 2 (approve) adds the verified key's id. Approving inserts the code under the token's
// nonce, so one form issues at most one code (single-use); the code goes to the exact redirect URI.
import { createHmac, randomBytes, randomUUID, timingSafeEqual } from "node:crypto";
import type { Request, Response } from "express";
import { GraphQLError } from "graphql";
import { ERROR_STATUS, errorCodeOf } from "../errors";
import { authenticate, type AuthDeps } from "../auth/authenticate";
import { hashToken } from "../auth/secrets";
import { serviceSecret } from "../db/service-secrets";
import type { DataClient as PrismaClient } from "../data/client";
import * as store from "../data/stores/oauth";
import { CODE_TTL_S, clientName, type ConsentRequest } from "./provider";

/** How long a consent page may stay open before its form must be started again. */
const FORM_TTL_S = 600;
export const CONSENT_PATH = "/authorize/consent";

/** The signed content of a consent form. */
interface FormPayload {
  /** Nonce: the id of the code row this form may create. */
  n: string;
  exp: number;
  clientId: string;
  redirectUri: string;
  codeChallenge: string;
  scopes: string[];
  state?: string;
  resource?: string;
  /** Step 2 only: the verified API key and its group. */
  keyId?: string;
  groupId?: string;
}

export class ConsentPage {
  private key: Promise<string> | undefined;

  constructor(
    private readonly prisma: PrismaClient,
    private readonly auth: AuthDeps,
  ) {}

  /** Step 1, called by provider.authorize on GET /authorize once the SDK has checked the request. */
  readonly start = async (request: ConsentRequest, res: Response): Promise<void> => {
    const form = await this.sign({
      n: randomUUID(),
      exp: Math.floor(Date.now() / 1000) + FORM_TTL_S,
      clientId: request.client.client_id,
      redirectUri: request.redirectUri,
      codeChallenge: request.codeChallenge,
      scopes: request.scopes,
      state: request.state,
      resource: request.resource,
    });
    identifyPage(res, 200, clientName(request.client), request.redirectUri, request.scopes, form);
  };

  /** POST /authorize/consent: action = continue (step 1), approve (step 2) or deny. */
  readonly submit = async (req: Request, res: Response): Promise<void> => {
    const body = (req.body ?? {}) as Record<string, unknown>;
    const payload = await this.verify(field(body, "form_token"));
    if (!payload) {
      return messagePage(res, 400, "This consent form has expired or is not valid", "Start the connection again from your AI client.");
    }
    const client = await store.findClientName(this.prisma, payload.clientId);
    if (!client) return messagePage(res, 400, "Unknown client", "The client that asked for access is no longer registered.");
    const name = client.clientName?.trim() || "unnamed MCP client";
    const action = field(body, "action");

    if (action === "deny") return redirectTo(res, payload, { error: "access_denied", error_description: "the person denied access" });

    if (action === "continue") {
      const given = field(body, "api_key")?.trim() ?? "";
      const retry = (problem: string) => identifyPage(res, 401, name, payload.redirectUri, payload.scopes, field(body, "form_token")!, problem);
      let credential;
      try {
        credential = await authenticate(given, "rest", this.auth);
      } catch (err) {
        // A refused key is the person's to fix; a database outage goes to the app's error handler (503).
        const status = err instanceof GraphQLError ? ERROR_STATUS[errorCodeOf(err) ?? "internal_error"] : 500;
        if (status !== 401 && status !== 403) throw err;
        return retry("That key is not valid: it is unknown, revoked or mistyped.");
      }
      if (credential.kind !== "api_key") return retry("Paste an API key of your property group (it starts with gcs_).");
      if (credential.pinnedPropertyId) return retry("This key is pinned to one property; a connector reads the whole group, so use a key that is not pinned.");
      const offered = payload.scopes.filter((s) => credential.scopes.has(s));
      if (offered.length === 0) return retry("This key holds none of the scopes the client asks for.");
      const groupName = await store.groupName(this.prisma, credential.propertyGroupId);
      const form = await this.sign({ ...payload, scopes: offered, keyId: credential.id, groupId: credential.propertyGroupId });
      return approvePage(res, 200, name, payload.redirectUri, groupName ?? credential.propertyGroupId, offered, form);
    }

    if (action === "approve" && payload.keyId && payload.groupId) {
      // The key may have been revoked since step 1.
      const key = await store.findApiKey(this.prisma, payload.keyId);
      if (!key || key.revokedAt || key.propertyGroupId !== payload.groupId || key.propertyId) {
        return messagePage(res, 403, "The API key is no longer valid", "Start the connection again from your AI client.");
      }
      const ticked = fields(body, "scope");
      const scopes = payload.scopes.filter((s) => ticked.includes(s) && key.scopes.includes(s));
      if (scopes.length === 0) {
        const groupName = await store.groupName(this.prisma, key.propertyGroupId);
        return approvePage(res, 400, name, payload.redirectUri, groupName ?? key.propertyGroupId, payload.scopes, field(body, "form_token")!, "Tick at least one scope, or deny.");
      }
      const code = randomBytes(32).toString("base64url");
      const grantId = await this.issueCode(payload, key.id, scopes, code);
      if (!grantId) return messagePage(res, 409, "This consent form was already used", "Start the connection again from your AI client.");
      // The audit trail of who let which client in (ids only, never the key or the code).
      req.log.info({ connector: grantId, clientId: payload.clientId, propertyGroupId: key.propertyGroupId, approvedByApiKeyId: key.id, scopes }, "connector approved");
      return redirectTo(res, payload, { code });
    }
    return messagePage(res, 400, "Unknown action", "Use the buttons of the consent page.");
  };

  /** The grant and its code in one transaction: the grant's id, or undefined when this form's nonce already made a code. */
  private async issueCode(payload: FormPayload, apiKeyId: string, scopes: string[], code: string): Promise<string | undefined> {
    const grantId = randomUUID();
    const issued = await store.insertGrantAndCode(
      this.prisma,
      { id: grantId, clientId: payload.clientId, propertyGroupId: payload.groupId!, scopes, approvedByApiKeyId: apiKeyId },
      {
        id: payload.n,
        codeHash: hashToken(code),
        redirectUri: payload.redirectUri,
        codeChallenge: payload.codeChallenge,
        resource: payload.resource ?? null,
        expiresAt: new Date(Date.now() + CODE_TTL_S * 1000),
      },
    );
    return issued ? grantId : undefined;
  }

  private secret(): Promise<string> {
    this.key ??= serviceSecret(this.prisma, "oauth_consent_hmac");
    return this.key;
  }

  private async sign(payload: FormPayload): Promise<string> {
    const data = Buffer.from(JSON.stringify(payload)).toString("base64url");
    return `${data}.${createHmac("sha256", await this.secret()).update(data).digest("base64url")}`;
  }

  private async verify(token: string | undefined): Promise<FormPayload | undefined> {
    if (!token || token.length > 16_384) return undefined;
    const [data, mac, extra] = token.split(".");
    if (!data || !mac || extra !== undefined) return undefined;
    const expected = createHmac("sha256", await this.secret()).update(data).digest();
    const given = Buffer.from(mac, "base64url");
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    const payload = JSON.parse(Buffer.from(data, "base64url").toString()) as FormPayload;
    return payload.exp > Date.now() / 1000 ? payload : undefined;
  }
}

/** The redirect back to the client: 303 so the browser follows the POST with a GET. */
function redirectTo(res: Response, payload: FormPayload, params: Record<string, string>) {
  const url = new URL(payload.redirectUri);
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  if (payload.state !== undefined) url.searchParams.set("state", payload.state);
  res.set("Cache-Control", "no-store");
  res.redirect(303, url.href);
}

/** One string field of a urlencoded body (a repeated field is not one). */
function field(body: Record<string, unknown>, name: string): string | undefined {
  const value = Object.hasOwn(body, name) ? body[name] : undefined;
  return typeof value === "string" ? value : undefined;
}

function fields(body: Record<string, unknown>, name: string): string[] {
  const value = Object.hasOwn(body, name) ? body[name] : undefined;
  if (typeof value === "string") return [value];
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [];
}

// ---------------------------------------------------------------------------------------------
// Pages. Every value from a client or a request goes through esc().

function esc(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function redirectHost(uri: string): string {
  const url = new URL(uri);
  return url.host || `${url.protocol}//`;
}

function identifyPage(res: Response, status: number, client: string, redirectUri: string, scopes: string[], form: string, problem?: string) {
  page(res, status, `Connect ${client}`, `
    <h1>Connect <b>${esc(client.slice(0, 100))}</b> to the Guest Context Service</h1>
    <p>It will send you back to <b>${esc(redirectHost(redirectUri))}</b> and asks to read:</p>
    <ul>${scopes.map((s) => `<li><code>${esc(s)}</code></li>`).join("")}</ul>
    ${problem ? `<p class="problem" role="alert">${esc(problem)}</p>` : ""}
    <form method="post" action="${CONSENT_PATH}">
      <input type="hidden" name="form_token" value="${esc(form)}">
      <label for="api_key">Prove you belong to the property group: paste an API key of the group (<code>gcs_…</code>)</label>
      <input id="api_key" name="api_key" type="password" autocomplete="off" spellcheck="false" required>
      <p class="note">The key is checked and not stored or shared with the client; the client gets its own token.</p>
      <button type="submit" name="action" value="continue">Continue</button>
      <button type="submit" name="action" value="deny" formnovalidate>Deny</button>
    </form>`);
}

function approvePage(res: Response, status: number, client: string, redirectUri: string, group: string, scopes: string[], form: string, problem?: string) {
  page(res, status, `Approve ${client}`, `
    <h1>Allow <b>${esc(client.slice(0, 100))}</b> to use the data of <b>${esc(group)}</b>?</h1>
    <p>After approval you are sent back to <b>${esc(redirectHost(redirectUri))}</b>. The client can use the MCP server only, with the scopes you tick; revoke it any time with <code>gcs connectors revoke</code>.</p>
    ${problem ? `<p class="problem" role="alert">${esc(problem)}</p>` : ""}
    <form method="post" action="${CONSENT_PATH}">
      <input type="hidden" name="form_token" value="${esc(form)}">
      <fieldset><legend>Scopes</legend>
      ${scopes.map((s) => `<label><input type="checkbox" name="scope" value="${esc(s)}" checked> <code>${esc(s)}</code></label>`).join("\n      ")}
      </fieldset>
      <button type="submit" name="action" value="approve">Approve</button>
      <button type="submit" name="action" value="deny">Deny</button>
    </form>`);
}

function messagePage(res: Response, status: number, title: string, text: string) {
  page(res, status, title, `<h1>${esc(title)}</h1><p>${esc(text)}</p>`);
}

function page(res: Response, status: number, title: string, main: string) {
  res.status(status);
  res.set({
    "Content-Type": "text/html; charset=utf-8",
    "Cache-Control": "no-store",
    // No script at all, no framing (clickjacking), no referrer carrying the request's query.
    // form-action is left open: browsers apply it to the redirect that follows the form too.
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
  });
  res.send(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)}</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:3rem auto;padding:0 1rem;color:#222}
input[type=password]{display:block;width:100%;padding:.5rem;margin:.5rem 0;font:inherit}fieldset label{display:block}
button{font:inherit;padding:.4rem 1rem;margin:.5rem .5rem 0 0}.problem{color:#a00;font-weight:600}.note{color:#555;font-size:.9rem}</style>
</head><body><main>${main}</main></body></html>`);
}
