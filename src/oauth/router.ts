// The MCP authorization endpoints, served by the MCP SDK's own router (mcpAuthRouter) over our
// PostgreSQL provider:
//   GET  /.well-known/oauth-protected-resource[/mcp]  RFC 9728, names /mcp and this issuer
//   GET  /.well-known/oauth-authorization-server      RFC 8414
//   POST /register                                    RFC 7591 dynamic client registration (public clients)
//   GET  /authorize                                   consent page (authorization code, PKCE S256 only)
//   POST /authorize/consent                           the consent page's form (consent.ts)
//   POST /token                                       authorization_code and refresh_token grants
//   POST /revoke                                      RFC 7009
// URLs are built from GCS_PUBLIC_URL. Like /mcp, the SDK and its router load on the first request
// that needs them, so an instance that never sees one stays smaller.
import express, { type NextFunction, type Request, type RequestHandler, type Response } from "express";
import type { OAuthError as SdkOAuthError } from "@modelcontextprotocol/sdk/server/auth/errors.js";
import type { Logger } from "../logger";
import { currentRecord } from "../observability/request";
import type { Services } from "../services";
import { CONSENT_PATH, ConsentPage } from "./consent";
import { CONNECTOR_SCOPES, PgOAuthProvider } from "./provider";
import { registrationHandler } from "./register";
import { acrossGroups, currentSession, inSession } from "../db/session";

const OAUTH_PATH = /^\/(?:\.well-known\/oauth-(?:authorization-server|protected-resource)(?:\/mcp)?|authorize(?:\/consent)?|token|register|revoke)\/?$/;

export interface OAuthRoutes {
  handler: RequestHandler;
  /** For `WWW-Authenticate: Bearer resource_metadata="…"` on a 401 from /mcp. */
  resourceMetadataUrl: string;
}

export function oauthRoutes(services: Services): OAuthRoutes {
  const base = services.config.publicUrl;
  const resourceUrl = `${base}/mcp`;
  let router: RequestHandler | undefined;
  return {
    resourceMetadataUrl: `${base}/.well-known/oauth-protected-resource/mcp`,
    handler: (req: Request, res: Response, next: NextFunction) => {
      if (!OAUTH_PATH.test(req.path)) return next();
      router ??= build(services, base, resourceUrl);
      // Clients, codes and tokens before any group's session: OAuth's cross-group path (db/session.ts).
      // A request the router passes on leaves that path again (next runs in the caller's session).
      const session = currentSession();
      const passOn: NextFunction = (err?: unknown) => inSession(session, () => next(err));
      acrossGroups("OAuth", () => router!(req, res, passOn));
    },
  };
}

function build(services: Services, base: string, resourceUrl: string): RequestHandler {
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { mcpAuthRouter, createOAuthMetadata } = require("@modelcontextprotocol/sdk/server/auth/router.js") as typeof import("@modelcontextprotocol/sdk/server/auth/router.js");
  const { metadataHandler } = require("@modelcontextprotocol/sdk/server/auth/handlers/metadata.js") as typeof import("@modelcontextprotocol/sdk/server/auth/handlers/metadata.js");
  const { OAuthError } = require("@modelcontextprotocol/sdk/server/auth/errors.js") as typeof import("@modelcontextprotocol/sdk/server/auth/errors.js");
  /* eslint-enable @typescript-eslint/no-require-imports */
  const prisma = services.db.primary;
  const consent = new ConsentPage(prisma, { prisma, pool: services.db.primaryPool, sessionKey: services.sessionKey });
  const provider = loggingFaults(new PgOAuthProvider(prisma, resourceUrl, consent.start), services.logger, OAuthError);
  const issuerUrl = new URL(base);
  const scopesSupported = [...CONNECTOR_SCOPES];
  const resourceName = "Guest Context Service MCP server";

  const router = express.Router();
  // The SDK's metadata says clients may authenticate with client_secret_post; this server registers
  // public clients only (no secret is stored in clear), so its metadata says "none".
  const metadata = {
    ...createOAuthMetadata({ provider, issuerUrl, scopesSupported }),
    token_endpoint_auth_methods_supported: ["none"],
    revocation_endpoint_auth_methods_supported: ["none"],
    // Served by register.ts, not by the SDK (whose handler the provider does not enable).
    registration_endpoint: new URL("/register", issuerUrl).href,
  };
  router.use("/.well-known/oauth-authorization-server", metadataHandler(metadata));
  // RFC 9728 puts the metadata of https://host/mcp at …/oauth-protected-resource/mcp (the SDK router
  // serves that one); the root path serves the same document for clients that look there first.
  // (A request for …/mcp passes through this handler unanswered, to the SDK's.)
  router.use(
    "/.well-known/oauth-protected-resource",
    metadataHandler({ resource: resourceUrl, authorization_servers: [issuerUrl.href], scopes_supported: scopesSupported, resource_name: resourceName }),
  );
  // Exact redirect URI matching, checked before the SDK's authorization handler: that one lets a
  // loopback URI differ in port (RFC 8252 §7.3), and would send its own error redirects (a missing
  // code_challenge, say) to such a URI. Here a mismatch is a 400 page, never a redirect.
  router.all("/authorize", express.urlencoded({ extended: false, limit: "32kb" }), (req, res, next) => {
    exactRedirectUri(provider, req, res).then((ok) => (ok ? next() : undefined), next);
  });
  router.use("/register", registrationHandler(prisma));
  // The SDK's per-address rate limits of the other endpoints stay on (per instance); they are created
  // here, on the first OAuth request, which express-rate-limit would otherwise report as a mistake
  // (it is deliberate: see above).
  const rateLimit = { validate: { creationStack: false } };
  router.use(
    mcpAuthRouter({
      provider,
      issuerUrl,
      scopesSupported,
      resourceName,
      resourceServerUrl: new URL(resourceUrl),
      authorizationOptions: { rateLimit },
      tokenOptions: { rateLimit },
      revocationOptions: { rateLimit },
    }),
  );
  // Mounted after the SDK's /authorize router, whose per-address rate limit (and urlencoded body
  // parser) this path passes through first: the form cannot be hammered to try keys.
  router.post(CONSENT_PATH, express.urlencoded({ extended: false, limit: "32kb" }), (req, res, next) => {
    consent.submit(req, res).catch(next);
  });
  return router;
}

/** False (and a 400 sent) when the request names a registered client and a redirect URI it did not register. */
async function exactRedirectUri(provider: PgOAuthProvider, req: Request, res: Response): Promise<boolean> {
  const params = ((req.method === "POST" ? req.body : req.query) ?? {}) as Record<string, unknown>;
  const { client_id: clientId, redirect_uri: redirectUri } = params;
  // Anything else (no client, no redirect_uri, repeated parameters) is the SDK's to refuse.
  if (typeof clientId !== "string" || typeof redirectUri !== "string") return true;
  const client = await provider.clientsStore.getClient(clientId);
  if (!client || client.redirect_uris.includes(redirectUri)) return true;
  res.set("Cache-Control", "no-store");
  res.status(400).json({ error: "invalid_request", error_description: "redirect_uri does not exactly match a registered redirect URI" });
  return false;
}

/**
 * The provider, with every method (and its clients store's) logging a fault of ours before the SDK's
 * handlers see it: they answer any error that is not an OAuthError with a bare 500 server_error, or a
 * server_error redirect, and log nothing. Logged with the request id (the SDK hands the provider no
 * request), so X-Request-Id finds the cause.
 */
function loggingFaults<T extends object>(target: T, logger: Logger, oauthError: abstract new (...args: never[]) => SdkOAuthError): T {
  return new Proxy(target, {
    get(obj, key) {
      const value: unknown = Reflect.get(obj, key);
      if (key === "clientsStore" && value && typeof value === "object") return loggingFaults(value, logger, oauthError);
      if (typeof value !== "function") return value;
      return async (...args: unknown[]) => {
        try {
          return await (value as (...a: unknown[]) => unknown).apply(obj, args);
        } catch (err) {
          if (!(err instanceof oauthError)) logger.error({ err, requestId: currentRecord()?.requestId }, "unhandled error");
          throw err;
        }
      };
    },
  });
}
