// npx tsx bench/explain-keyset.ts <database-url> <property-group-id>: EXPLAIN (ANALYZE, BUFFERS) of
// the guests page, first and ~90% deep, as the service sends it (built by data/guests.ts through
// data/sql.ts, with the same parameter values pg sends) and as bench/ceiling-server.ts sends it.
// Read-only: SELECTs only, so it may run against a loaded benchmark database.
import { Pool } from "pg";
import { GUEST_ROW, guests } from "../src/data/guests";
import { scopedSql } from "../src/data/sql";
import type { Readers } from "../src/data/readers";

const [databaseUrl, groupId] = process.argv.slice(2);
if (!databaseUrl || !groupId) throw new Error("usage: tsx bench/explain-keyset.ts <database-url> <property-group-id>");
const pool = new Pool({ connectionString: databaseUrl, max: 1 });
const TAKE = 101;

async function explain(label: string, text: string, values: unknown[]) {
  process.stdout.write(`\n## ${label}\n${text.replace(/\s+/g, " ")}\n-- ${JSON.stringify(values)}\n`);
  // Twice: the first run may read pages the second finds in shared buffers.
  for (const run of ["cold", "warm"]) {
    const { rows } = await pool.query(`EXPLAIN (ANALYZE, BUFFERS) ${text}`, values);
    process.stdout.write(`-- ${run}\n${rows.map((r) => r["QUERY PLAN"]).join("\n")}\n`);
  }
}

async function main() {
  const { rows: [{ n }] } = await pool.query("SELECT count(*)::int AS n FROM guest_profiles WHERE property_group_id = $1", [groupId]);
  const { rows: [deep] } = await pool.query(
    `SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at, id::text AS id FROM guest_profiles
     WHERE property_group_id = $1 ORDER BY created_at, id OFFSET $2 LIMIT 1`,
    [groupId, Math.min(900_000, Math.floor(n * 0.9))],
  );
  // The service's statement text and values: data/sql.ts hands them to pool.query, captured here.
  const captured: { text: string; values: unknown[] }[] = [];
  const capture = { query: async (text: string, values: unknown[]) => (captured.push({ text, values }), { rows: [] }) } as unknown as Pool;
  const page = guests({ sql: scopedSql(capture, { propertyGroupId: groupId, propertyId: null }) } as unknown as Readers).page;
  await page({}, null, TAKE, GUEST_ROW);
  await page({}, [deep.created_at, deep.id], TAKE, GUEST_ROW);
  // pg sends a Date as local time with an offset; the server reads it as timestamptz.
  const asPgSends = (values: unknown[]) => values.map((v) => (v instanceof Date ? require("pg/lib/utils").prepareValue(v) : v));
  await explain(`service, first page (${n} guests in the group)`, captured[0].text, asPgSends(captured[0].values));
  await explain("service, ~90% deep", captured[1].text, asPgSends(captured[1].values));
  const COLUMNS = `id, property_id, integration_id, source_id, master_profile_id, given_name, family_name, email, phone,
    language, country_code, city, to_char(birth_date, 'YYYY-MM-DD') AS birth_date, vip_code,
    to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at,
    to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS updated_at`;
  await explain("ceiling, first page", `SELECT ${COLUMNS} FROM guest_profiles g WHERE property_group_id = $1 ORDER BY g.created_at, g.id LIMIT $2`, [groupId, TAKE]);
  await explain(
    "ceiling, ~90% deep",
    `SELECT ${COLUMNS} FROM guest_profiles g WHERE property_group_id = $1 AND g.created_at >= $2 AND (g.created_at > $2 OR g.id > $3) ORDER BY g.created_at, g.id LIMIT $4`,
    [groupId, deep.created_at, deep.id, TAKE],
  );
  await pool.end();
}

main().catch((err) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exit(1);
});
