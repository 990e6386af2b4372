// POST /register: RFC 7591 dynamic client registration, public clients only (no secret: PKCE
// protects the code). Ours rather than the SDK's handler, which counted its per-address limit in each
// process and answered any fault of ours with a bare 500 and no log line:
// - the limit (REGISTRATIONS_PER_HOUR per address) is a count of oauth_clients rows, so it holds
//   across instances;
// - metadata the database cannot hold (NUL, lone surrogates, JSON nested deeper than Prisma takes) is
//   a 400 naming it, like every other door's input (graphql/text.ts);
// - clients that never obtained a token are deleted UNUSED_CLIENT_RETENTION_S after registering,
//   swept here: registering is the only way the table grows.
import { randomUUID } from "node:crypto";
import cors from "cors";
import express, { type NextFunction, type Request, type Response, type Router } from "express";
import { ipKeyGenerator } from "express-rate-limit";
import type { OAuthClientMetadata, OAuthClientMetadataSchema } from "@modelcontextprotocol/sdk/shared/auth.js";
import type { DataClient as PrismaClient } from "../data/client";
import * as store from "../data/stores/oauth";
import { jsonDepth, unstorableDetail, unstorablePath } from "../graphql/text";
import { clientInformation } from "./provider";

/** Registrations per client address (an IPv6 address's /56) per sliding hour, across instances. */
export const REGISTRATIONS_PER_HOUR = 20;
/** A registered client that never obtained a token is deleted this long after registering. */
export const UNUSED_CLIENT_RETENTION_S = 24 * 3600;
const MAX_REDIRECT_URIS = 10;
/** Registration metadata nests 4 levels at most in practice (jwks.keys[i].x5c); Prisma's limit is 128. */
const MAX_METADATA_DEPTH = 16;

/** An RFC 7591 §3.2.2 error: a 400 (429 for the limit) with `error` and `error_description`. */
class RegistrationError extends Error {
  constructor(
    readonly status: number,
    readonly code: "invalid_client_metadata" | "invalid_redirect_uri" | "too_many_requests",
    message: string,
    readonly retryAfterS?: number,
  ) {
    super(message);
  }
}

const invalidMetadata = (description: string) => new RegistrationError(400, "invalid_client_metadata", description);
const invalidRedirectUri = (description: string) => new RegistrationError(400, "invalid_redirect_uri", description);

export function registrationHandler(prisma: PrismaClient): Router {
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { OAuthClientMetadataSchema } = require("@modelcontextprotocol/sdk/shared/auth.js") as typeof import("@modelcontextprotocol/sdk/shared/auth.js");
  const { allowedMethods } = require("@modelcontextprotocol/sdk/server/auth/middleware/allowedMethods.js") as typeof import("@modelcontextprotocol/sdk/server/auth/middleware/allowedMethods.js");
  /* eslint-enable @typescript-eslint/no-require-imports */
  const router = express.Router();
  // As the SDK's handler: any origin (web-based MCP clients register from the browser), POST only.
  router.use(cors());
  router.use(allowedMethods(["POST"]));
  router.use(express.json({ limit: "32kb" }));
  router.post("/", async (req, res, next) => {
    res.set("Cache-Control", "no-store");
    try {
      const metadata = checkMetadata(req.body, OAuthClientMetadataSchema);
      await store.deleteUnusedClients(prisma, UNUSED_CLIENT_RETENTION_S);
      const uris = metadata.redirect_uris.map(String);
      const result = await store.insertClientWithinLimit(
        prisma,
        {
          id: randomUUID(),
          clientName: typeof metadata.client_name === "string" ? metadata.client_name.slice(0, 200) : null,
          redirectUris: uris,
          // A secret would have to be stored in clear to compare: every client is public.
          metadata: { ...metadata, redirect_uris: uris, token_endpoint_auth_method: "none" },
          registeredFrom: ipKeyGenerator(req.ip ?? ""),
        },
        REGISTRATIONS_PER_HOUR,
        3600,
      );
      if ("retryAfterS" in result) {
        throw new RegistrationError(429, "too_many_requests", `at most ${REGISTRATIONS_PER_HOUR} client registrations per hour from one address; retry in ${result.retryAfterS} s`, result.retryAfterS);
      }
      res.status(201).json(clientInformation(result.row));
    } catch (err) {
      next(err);
    }
  });
  // The body parser's refusals and our own are RFC 7591 errors; anything else is a fault of ours,
  // logged with its cause and request id and answered without internals.
  router.use((err: Error & { type?: string; status?: number }, req: Request, res: Response, _next: NextFunction) => {
    res.set("Cache-Control", "no-store");
    if (err instanceof RegistrationError) {
      if (err.retryAfterS) res.set("Retry-After", String(err.retryAfterS));
      return void res.status(err.status).json({ error: err.code, error_description: err.message });
    }
    if (err.type === "entity.parse.failed") return void res.status(400).json({ error: "invalid_client_metadata", error_description: "the body is not valid JSON" });
    if (err.type === "entity.too.large") return void res.status(400).json({ error: "invalid_client_metadata", error_description: "the registration metadata is larger than 32 KB" });
    if (typeof err.status === "number" && err.status < 500) {
      return void res.status(400).json({ error: "invalid_client_metadata", error_description: "the request body could not be read" });
    }
    req.log.error({ err, requestId: req.id }, "unhandled error");
    res.status(500).json({ error: "server_error", error_description: "unexpected server fault; retry later" });
  });
  return router;
}

/**
 * The metadata as the SDK's schema parsed it, once it is also storable and its redirect URIs are
 * safe; else the RFC 7591 error naming the member. Storability is checked on the body as sent, before
 * the schema (whose messages would not say what is wrong with a lone surrogate).
 */
function checkMetadata(body: unknown, schema: typeof OAuthClientMetadataSchema): OAuthClientMetadata {
  const unstorable = unstorablePath(body, "");
  if (unstorable !== undefined) {
    const problem = unstorableDetail(unstorable || "the body");
    throw unstorable.startsWith("redirect_uris") ? invalidRedirectUri(problem) : invalidMetadata(problem);
  }
  const depth = jsonDepth(body);
  if (depth > MAX_METADATA_DEPTH) throw invalidMetadata(`the metadata nests ${depth} levels deep; at most ${MAX_METADATA_DEPTH} are allowed`);
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const at = issue.path.map(String).join(".");
    const description = `${at || "the body"}: ${issue.message}`;
    throw at.startsWith("redirect_uris.") ? invalidRedirectUri(description) : invalidMetadata(description);
  }
  const uris = parsed.data.redirect_uris.map(String);
  if (uris.length === 0 || uris.length > MAX_REDIRECT_URIS) throw invalidRedirectUri(`register between 1 and ${MAX_REDIRECT_URIS} redirect_uris`);
  for (const uri of uris) {
    const problem = redirectUriProblem(uri);
    if (problem) throw invalidRedirectUri(`redirect_uri ${JSON.stringify(uri.slice(0, 200))}: ${problem}`);
  }
  return parsed.data;
}

/**
 * Where a code may be sent: HTTPS anywhere, HTTP only to a loopback address (RFC 8252 §7.3), or
 * an app's own scheme (RFC 8252 §7.1, `cursor://…`); never a fragment, not even an empty one
 * (RFC 6749 §3.1.2: `https://x/cb#` has one, though URL.hash is ""), nor a scheme a browser would run.
 */
function redirectUriProblem(uri: string): string | undefined {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return "not a URL";
  }
  if (uri.includes("#")) return "must not have a fragment";
  const scheme = url.protocol.slice(0, -1);
  if (["javascript", "data", "vbscript", "file", "blob", "about", "ws", "wss", "ftp"].includes(scheme)) return `the ${scheme}: scheme is not allowed`;
  if (scheme === "http" && !["localhost", "127.0.0.1", "[::1]"].includes(url.hostname)) return "http is allowed only for loopback addresses; use https";
  return undefined;
}
