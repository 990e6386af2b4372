// Counts the database queries each request issues, through AsyncLocalStorage: a Prisma query
// extension bumps the counter of the request whose async context made the call. (Counting at the pg
// pool is not reliable: Prisma's engine runs some queries from async contexts it created earlier.)
// Every read path issues one SQL statement per Prisma query (no nested includes), and the SQL read
// paths (data/sql.ts) count each of theirs, so this is the statement count reported in the
// request log and the X-Sql-Statements header.
import { AsyncLocalStorage } from "node:async_hooks";
import type { PrismaClient } from "../generated/prisma/client";

const counter = new AsyncLocalStorage<{ statements: number }>();

/** Starts counting for the rest of the current async context (an Express request). */
export function startCounting(): { statements: () => number } {
  const store = { statements: 0 };
  counter.enterWith(store);
  return { statements: () => store.statements };
}

/** Counts one statement for the current request (the SQL read paths call it per statement). */
export function countStatement(): void {
  const store = counter.getStore();
  if (store) store.statements++;
}

export function countQueries(prisma: PrismaClient): PrismaClient {
  return prisma.$extends({
    query: {
      $allOperations({ args, query }) {
        countStatement();
        return query(args);
      },
    },
  }) as unknown as PrismaClient;
}
