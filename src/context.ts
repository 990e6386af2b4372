// The one per-request context, built the same way for every door (/v1, /graphql, MCP): who is
// calling, what they may see, the request's data handle, and fresh loaders.
import type { ServerResponse } from "node:http";
import { GraphQLError } from "graphql";
import { ERROR_STATUS, errorCodeOf } from "./errors";
import { authenticate, bearerToken, type AuthDeps, type Credential, type Surface } from "./auth/authenticate";
import { resolveScope, type Scope } from "./auth/scope";
import { createData, type Data } from "./data";
import { createLoaders, type Loaders } from "./loaders";
import type { Database } from "./db/database";
import type { SessionKeyConfig } from "./auth/session";
import type { CredentialGate } from "./http/credential-gate";
import type { AuthFailures } from "./http/auth-failures";
import { webhookEnv, type WebhookEnv, type WebhookServices } from "./webhooks/endpoints";

export interface RequestContext {
  credential: Credential;
  scope: Scope;
  /** Every read and write of the request, limited to its scope (src/data). */
  data: Data;
  loaders: Loaders;
  cursorSecret: string;
  /** What the webhook-endpoint fields need of the service: URL policy, resolver, sealing key. */
  readonly webhooks: WebhookEnv;
}

export interface RequestCredentials {
  authorization: string | undefined;
  propertyHeader: string | undefined;
  surface: Surface;
  /** The first scope the route requires, echoed by 403s raised while authenticating. */
  requiredScope?: string;
  /** The response the request's database work is tied to: holds a per-credential slot until it ends. */
  response?: ServerResponse;
  /** Slots to hold: one per call of an MCP batch (default 1). */
  slots?: number;
  /** The client's address (Express's req.ip): failed authentications are counted per address. */
  address?: string;
  /** The door proves a remembered credential before it answers (auth/authenticate.ts proveRememberedCredential). */
  provesBeforeAnswering?: boolean;
}

/** What a context is made from: the process's long-lived handles (services.ts builds them). */
export interface ContextServices extends WebhookServices {
  db: Database;
  cursorSecret: string;
  sessionKey: () => Promise<SessionKeyConfig>;
  credentialGate?: CredentialGate;
  authFailures?: AuthFailures;
}

export async function createContext(services: ContextServices, req: RequestCredentials): Promise<RequestContext> {
  const prisma = services.db.reader;
  const deps: AuthDeps = { prisma, pool: services.db.readerPool, sessionKey: services.sessionKey, remember: req.provesBeforeAnswering };
  let token: string;
  let credential: Credential;
  try {
    token = bearerToken(req.authorization);
    credential = await authenticate(token, req.surface, deps, req.requiredScope);
  } catch (err) {
    // Counted per address: an address past its budget is refused before the next lookup (http/auth-failures.ts).
    if (err instanceof GraphQLError && ERROR_STATUS[errorCodeOf(err)!] === 401) services.authFailures?.failed(req.address);
    throw err;
  }
  services.authFailures?.succeeded(token);
  if (req.response) await services.credentialGate?.enter(`${credential.kind}:${credential.id}`, req.response, req.slots);
  const scope = await resolveScope(credential, req.propertyHeader, prisma);
  return new Context(credential, scope, createData(services.db, scope), services.cursorSecret, services);
}

/**
 * A class, not an object literal with a getter: V8 builds a literal whose getter is a new closure in
 * dictionary mode, and while each request's context was one, everything the request reached survived
 * the young-generation collections and was promoted to the old generation, to wait for a full
 * collection (docs/performance.md, "No per-request promotion"; test/integration/request-objects.test.ts).
 */
class Context implements RequestContext {
  private made?: Loaders;
  constructor(
    readonly credential: Credential,
    readonly scope: Scope,
    readonly data: Data,
    readonly cursorSecret: string,
    private readonly services: ContextServices,
  ) {}
  get webhooks(): WebhookEnv {
    return webhookEnv(this.services);
  }
  /** Made on first use: the hot paths load nothing. */
  get loaders(): Loaders {
    return (this.made ??= createLoaders(this.data));
  }
}
