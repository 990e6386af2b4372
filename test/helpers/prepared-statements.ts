// What PostgreSQL keeps prepared on the connection the last request used: pg-pool hands out the
// connection released last, so the next connect() is the one that ran the request's statements.
import type { Pool } from "pg";

export async function preparedOnLastConnection(pool: Pool): Promise<{ name: string; statement: string }[]> {
  const client = await pool.connect();
  try {
    return (await client.query<{ name: string; statement: string }>("SELECT name, statement FROM pg_prepared_statements")).rows;
  } finally {
    client.release();
  }
}
