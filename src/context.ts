// The one per-request context, built the same way for /v1 and /graphql: who is calling, what they
// may see, the database, and fresh loaders.
import type { ServerResponse } from "node:http";
import type { PrismaClient } from "./generated/prisma/client";
import { authenticate, bearerToken, type AuthDeps, type Credential, type Surface } from "./auth/authenticate";
import { resolveScope, type Scope } from "./auth/scope";
import { scopedPrisma } from "./auth/tenant-scope";
import { createLoaders, type Loaders } from "./loaders";
import { scopedSql, type ScopedSql } from "./db/scoped-sql";
import type { Services } from "./services";

export interface GraphQLContext {
  credential: Credential;
  scope: Scope;
  /** Reads, limited to the caller's scope (tenant-scope.ts); the replica when one is configured. */
  db: PrismaClient;
  /** The hot read paths in SQL, limited to the same scope by the same rules (db/scoped-sql.ts). */
  sql: ScopedSql;
  /** Writes, limited to the caller's scope. */
  dbPrimary: PrismaClient;
  /**
   * Reads across the caller's whole group even when the request is narrowed to one property: only
   * for rules the spec defines group-wide (consent precedence).
   */
  dbGroup: PrismaClient;
  loaders: Loaders;
  cursorSecret: string;
}

export interface RequestCredentials {
  authorization: string | undefined;
  propertyHeader: string | undefined;
  surface: Surface;
  /** The first scope the route requires, echoed by 403s raised while authenticating. */
  requiredScope?: string;
  /** The response the request's database work is tied to: holds a per-credential slot until it ends. */
  response?: ServerResponse;
}

export async function createContext(services: Services, req: RequestCredentials): Promise<GraphQLContext> {
  const prisma = services.db.reader;
  const deps: AuthDeps = { prisma, pool: services.db.readerPool, sessionKey: services.sessionKey };
  const credential = await authenticate(bearerToken(req.authorization), req.surface, deps, req.requiredScope);
  if (req.response) await services.credentialGate?.enter(`${credential.kind}:${credential.id}`, req.response);
  const scope = await resolveScope(credential, req.propertyHeader, prisma);
  // The Prisma clients and the loaders are made on first use: the hot paths read in SQL only.
  let db: PrismaClient | undefined;
  let dbPrimary: PrismaClient | undefined;
  let dbGroup: PrismaClient | undefined;
  let loaders: Loaders | undefined;
  const reader = () => (db ??= scopedPrisma(prisma, scope));
  const context: GraphQLContext = {
    credential,
    scope,
    get db() {
      return reader();
    },
    sql: scopedSql(services.db.readerPool, scope),
    get dbPrimary() {
      return (dbPrimary ??= services.db.reader === services.db.primary ? reader() : scopedPrisma(services.db.primary, scope));
    },
    get dbGroup() {
      return (dbGroup ??= scope.propertyId ? scopedPrisma(prisma, { ...scope, propertyId: null }) : reader());
    },
    get loaders() {
      return (loaders ??= createLoaders(context));
    },
    cursorSecret: services.cursorSecret,
  };
  return context;
}
