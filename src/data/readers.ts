// What a data/ module reads and writes through for one request: the caller's scope, scoped SQL on
// the reader's pool, and scoped Prisma clients made on first use (the hot paths never build one).
import type { PrismaClient } from "../generated/prisma/client";
import type { Scope } from "../auth/scope";
import type { Database } from "../db/database";
import { scopedPrisma } from "./tenant";
import { scopedSql, type ScopedSql } from "./sql";

export interface Readers {
  scope: Scope;
  sql: ScopedSql;
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
  // Where this request reads, chosen once: the replica's health can change mid-request, and some
  // reads must come from one server (the event timeline's watermark and its rows). A field read, no
  // statement.
  const readerPool = db.readerPool;
  const readerClient = db.reader;
  let reader: PrismaClient | undefined;
  let primary: PrismaClient | undefined;
  let group: PrismaClient | undefined;
  const readers: Readers = {
    scope,
    sql: scopedSql(readerPool, scope),
    get prisma() {
      return (reader ??= scopedPrisma(readerClient, scope));
    },
    get primary() {
      return (primary ??= readerClient === db.primary ? readers.prisma : scopedPrisma(db.primary, scope));
    },
    get group() {
      return (group ??= scope.propertyId ? scopedPrisma(readerClient, { ...scope, propertyId: null }) : readers.prisma);
    },
  };
  return readers;
}
