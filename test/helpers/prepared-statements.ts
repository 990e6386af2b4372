// The statements PostgreSQL keeps prepared on the connection the last request used, with how often
// each ran on a kept (generic) or a fresh (custom) plan. pg-pool hands out the connection released
// last, so the next connect() is the one that ran the request's last statement.
import type { Pool } from "pg";

const PREPARED = "SELECT name, statement, generic_plans::int AS generic, custom_plans::int AS custom FROM pg_prepared_statements";

export interface PreparedStatement {
  name: string;
  statement: string;
  generic: number;
  custom: number;
}

export async function preparedOnLastConnection(pool: Pool): Promise<PreparedStatement[]> {
  const client = await pool.connect();
  try {
    return (await client.query<PreparedStatement>(PREPARED)).rows;
  } finally {
    client.release();
  }
}

/**
 * The same, on every connection of the pool at once (a request that ran its statements in parallel
 * used several): all of them are idle after the request, so asking for as many as the pool holds
 * gets each once.
 */
export async function preparedOnEveryConnection(pool: Pool): Promise<PreparedStatement[]> {
  const clients = await Promise.all(Array.from({ length: pool.totalCount }, () => pool.connect()));
  try {
    const rows = await Promise.all(clients.map((c) => c.query<PreparedStatement>(PREPARED)));
    return rows.flatMap((r) => r.rows);
  } finally {
    for (const c of clients) c.release();
  }
}
