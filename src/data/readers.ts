// What a data/ module reads and writes through for one request: the caller's scope, scoped SQL on
// the reader's pool, and scoped Prisma clients made on first use (the hot paths never build one).
import type { Pool } from "pg";
import type { PrismaClient } from "../generated/prisma/client";
import type { Scope } from "./scope";
import type { Database } from "../db/database";
import { scopedPrisma } from "./tenant";
import { scopedSql, type ScopedSql } from "./sql";

export interface Readers {
  scope: Scope;
  sql: ScopedSql;
  /** Scoped SQL across the caller's whole group: only for what the spec defines group-wide (consent precedence), as `group`. */
  readonly groupSql: ScopedSql;
  /** Reads, limited to the caller's scope; the replica when one is configured. */
  readonly prisma: PrismaClient;
  /** Writes, limited to the caller's scope. */
  readonly primary: PrismaClient;
  /**
   * Reads across the caller's whole group even when the request is narrowed to one property: only
   * for rules the spec defines group-wide (consent precedence).
   */
  readonly group: PrismaClient;
}

export function createReaders(db: Database, scope: Scope): Readers {
  return new RequestReaders(db, scope);
}

/** A class with getters on its prototype, not a literal with getters: see Context in context.ts. */
class RequestReaders implements Readers {
  readonly sql: ScopedSql;
  // Where this request reads, chosen once: the replica's health can change mid-request, and some
  // reads must come from one server (the event timeline's watermark and its rows). A field read, no
  // statement.
  private readonly readerClient: PrismaClient;
  private readonly readerPool: Pool;
  private reader?: PrismaClient;
  private writer?: PrismaClient;
  private groupWide?: PrismaClient;
  private groupWideSql?: ScopedSql;

  constructor(
    private readonly db: Database,
    readonly scope: Scope,
  ) {
    this.readerClient = db.reader;
    this.readerPool = db.readerPool;
    this.sql = scopedSql(this.readerPool, scope);
  }

  get prisma(): PrismaClient {
    return (this.reader ??= scopedPrisma(this.readerClient, this.scope));
  }

  get primary(): PrismaClient {
    return (this.writer ??= this.readerClient === this.db.primary ? this.prisma : scopedPrisma(this.db.primary, this.scope));
  }

  get groupSql(): ScopedSql {
    return (this.groupWideSql ??= this.scope.propertyId ? scopedSql(this.readerPool, { ...this.scope, propertyId: null }) : this.sql);
  }

  get group(): PrismaClient {
    return (this.groupWide ??= this.scope.propertyId ? scopedPrisma(this.readerClient, { ...this.scope, propertyId: null }) : this.prisma);
  }
}
