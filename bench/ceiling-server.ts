// The raw ceiling: node:http + pg running the very SQL the service issues for GET /v1/guests (the
// API key lookup and the keyset page), with the same signed cursor and envelope, and nothing else.
// Usage: tsx bench/ceiling-server.ts <database-url> <port> <cursor-secret>
import { createHash } from "node:crypto";
import http from "node:http";
import { Pool } from "pg";
import { decodeCursor, encodeCursor } from "../src/pagination/cursor";

const [databaseUrl, port, secret] = process.argv.slice(2);
const pool = new Pool({ connectionString: databaseUrl, max: 10 });

// Output columns are qualified with the table alias: an unqualified ORDER BY created_at would sort
// by the to_char() text of the same name instead of using the index.
const COLUMNS = `id, property_id, integration_id, source_id, master_profile_id, given_name, family_name, email, phone,
  language, country_code, city, to_char(birth_date, 'YYYY-MM-DD') AS birth_date, vip_code,
  to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at,
  to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS updated_at`;

const send = (res: http.ServerResponse, status: number, body: unknown) => {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), "x-sql-statements": "2" });
  res.end(text);
};

const server = http.createServer(async (req, res) => {
  try {
    const url = new URL(req.url ?? "/", "http://x");
    if (url.pathname !== "/v1/guests") return send(res, 404, { error: "not_found" });
    const token = /^Bearer (\S+)$/.exec(req.headers.authorization ?? "")?.[1];
    const hash = createHash("sha256").update(token ?? "").digest("hex");
    const key = await pool.query("SELECT property_group_id FROM api_keys WHERE token_hash = $1 AND revoked_at IS NULL", [hash]);
    if (key.rowCount === 0) return send(res, 401, { error: "unauthorized" });
    const group: string = key.rows[0].property_group_id;
    const limit = Math.min(Number(url.searchParams.get("limit") ?? 100), 500);
    const binding = { family: "guests", propertyGroupId: group, query: { filter: {}, propertyId: null } };
    const cursor = url.searchParams.get("cursor");
    const after = cursor ? decodeCursor(cursor, binding, secret) : null;
    const rows = after
      ? await pool.query(
          `SELECT ${COLUMNS} FROM guest_profiles g WHERE property_group_id = $1
           AND g.created_at >= $2 AND (g.created_at > $2 OR g.id > $3) ORDER BY g.created_at, g.id LIMIT $4`,
          [group, after[0], after[1], limit + 1],
        )
      : await pool.query(`SELECT ${COLUMNS} FROM guest_profiles g WHERE property_group_id = $1 ORDER BY g.created_at, g.id LIMIT $2`, [group, limit + 1]);
    const hasMore = rows.rows.length > limit;
    const data = rows.rows.slice(0, limit);
    const last = data[data.length - 1];
    send(res, 200, { data, next_cursor: hasMore ? encodeCursor([last.created_at, last.id], binding, secret) : null, has_more: hasMore });
  } catch {
    send(res, 400, { error: "invalid_cursor" });
  }
});
server.listen(Number(port), "127.0.0.1");
// Exit cleanly on SIGTERM, so a --cpu-prof profile gets written (bench/rest-overhead.ts).
process.on("SIGTERM", () => process.exit(0));
