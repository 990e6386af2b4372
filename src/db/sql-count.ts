// Counts and times the SQL statements each request issues, in the request's record
// (observability/request.ts, kept through AsyncLocalStorage): a Prisma query extension for Prisma's,
// runStatement() for the SQL read paths (data/sql.ts, the credential lookup). (Counting at the pg
// pool is not reliable: Prisma's engine runs some queries from async contexts it created earlier.)
// Every read path issues one SQL statement per Prisma query (no nested includes), so this is the
// statement count reported in the request log, the X-Sql-Statements and Server-Timing headers and
// gcs_sql_statements_per_request. Statement spans: runStatement's here, Prisma's through its tracing
// helper (observability/tracing.ts), both only when tracing is on.
import type { Pool, QueryResult, QueryResultRow } from "pg";
import type { PrismaClient } from "../generated/prisma/client";
import { currentRecord } from "../observability/request";
import { traceStatement } from "../observability/tracing";
import { rowObjectBuilder } from "./row-objects";
import { isPoolerPreparedRefusal } from "./errors";
import { readOn } from "./tenant-pool";

/** The first time a pooler refuses a named statement (db/errors.ts), naming turns off for this process. */
let preparing = true;

/**
 * Runs one statement of a SQL read path on `pool`: counted, timed and traced for the current request.
 * A `name` makes it a prepared statement on each connection (parsed and planned there once), unless
 * a pooler has shown that it cannot keep them (above).
 */
export async function runStatement<Row extends QueryResultRow>(pool: Pool, text: string, values: unknown[], name?: string): Promise<QueryResult<Row>> {
  const record = currentRecord();
  if (record) record.statements++;
  const started = performance.now();
  const unnamed = () => readOn(pool, { text, values, rowMode: "array" });
  try {
    const result = await traceStatement(text, async () => {
      if (!name || !preparing) return unnamed();
      try {
        return await readOn(pool, { name, text, values, rowMode: "array" });
      } catch (err) {
        if (!isPoolerPreparedRefusal(err)) throw err;
        preparing = false;
        return unnamed();
      }
    });
    // Array rows, then one object literal per row (db/row-objects.ts).
    const build = rowObjectBuilder(result.fields, name);
    const rows = result.rows as unknown[];
    for (let i = 0; i < rows.length; i++) rows[i] = build(rows[i] as unknown[]);
    return result as unknown as QueryResult<Row>;
  } finally {
    if (record) record.sqlMs += performance.now() - started;
  }
}

export function countQueries(prisma: PrismaClient): PrismaClient {
  return prisma.$extends({
    query: {
      async $allOperations({ args, query }) {
        const record = currentRecord();
        if (!record) return query(args);
        record.statements++;
        const started = performance.now();
        try {
          return await query(args);
        } finally {
          record.sqlMs += performance.now() - started;
        }
      },
    },
  }) as unknown as PrismaClient;
}
