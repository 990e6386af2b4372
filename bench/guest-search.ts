// npx tsx bench/guest-search.ts: the guestSearch statement (find_guests) at BENCH_GUESTS guests in one
// property group (default 1,000,000) plus a second group of 1,000, on a throwaway PostgreSQL 15 with
// the real migrations. Prints, per kind of query, the median and worst time of 20 runs and whether
// the plan touched guest_profiles by a sequential scan.
import { Client } from "pg";
import { migrate } from "../src/db/migrate";
import { tenantSql } from "../src/data/tenant";
import { searchStatement } from "../src/data/search";
import { FAMILY_NAMES, GIVEN_NAMES } from "../src/fixtures/catalog";
import { startTestPostgres } from "../test/helpers/postgres";

const GUESTS = Number(process.env.BENCH_GUESTS ?? 1_000_000);
const RUNS = 20;
const G1 = "00000000-0000-4000-8000-0000000000a1";
const G2 = "00000000-0000-4000-8000-0000000000a2";
const log = (line: string) => process.stderr.write(`[bench] ${line}\n`);
const lit = (values: string[]) => `ARRAY[${values.map((v) => `'${v.replace(/'/g, "''")}'`).join(",")}]`;

async function seedGroup(db: Client, group: string, n: number, tag: string) {
  const org = group.replace(/a(\d)$/, "b$1");
  const property = group.replace(/a(\d)$/, "c$1");
  const integration = group.replace(/a(\d)$/, "d$1");
  await db.query(`INSERT INTO organisations (id, name) VALUES ($1, $2)`, [org, tag]);
  await db.query(`INSERT INTO property_groups (id, organisation_id, name) VALUES ($1, $2, $3)`, [group, org, tag]);
  await db.query(
    `INSERT INTO properties (id, property_group_id, name, code, kind, timezone, country_code, city, currency, updated_at)
     VALUES ($1, $2, $3, $3, 'hotel', 'Europe/London', 'GB', 'London', 'GBP', now())`,
    [property, group, `${tag} Hotel`],
  );
  await db.query(
    `INSERT INTO integrations (id, property_group_id, property_id, provider, name, source_ref, updated_at)
     VALUES ($1, $2, $3, 'opera_cloud', 'Opera', 'ref', now())`,
    [integration, group, property],
  );
  // Names from the fixture lists (so a common name matches n/1,600 guests), some with accents.
  const given = lit([...GIVEN_NAMES, "Zoë", "Chloé", "Åsa", "Jürgen"]);
  const family = lit([...FAMILY_NAMES, "Müller", "Núñez", "O'Brien", "Lefèvre"]);
  await db.query(
    `INSERT INTO guest_profiles (id, property_group_id, property_id, integration_id, source_id, given_name, family_name, email, phone, created_at, updated_at)
     SELECT gen_random_uuid(), $1, $2, $3, 'SRC' || n,
       (${given})[1 + n % 44], (${family})[1 + (n / 44) % 44],
       'guest' || n || '@example.com', '+4477' || lpad(n::text, 8, '0'), now(), now()
     FROM generate_series(1, $4::int) n`,
    [group, property, integration, n],
  );
  await db.query(
    `INSERT INTO reservations (id, property_group_id, property_id, integration_id, source_id, guest_profile_id, confirmation_number,
       status, arrival_date, departure_date, currency, booked_at, updated_at)
     SELECT gen_random_uuid(), property_group_id, property_id, integration_id, 'R' || source_id, id, 'CONF' || substr(source_id, 4),
       'checked_out', date '2025-01-01' + (length(source_id) % 300), date '2025-01-03' + (length(source_id) % 300), 'GBP', now(), now()
     FROM guest_profiles WHERE property_group_id = $1`,
    [group],
  );
  await db.query(`INSERT INTO loyalty_programs (id, property_group_id, name, code, points_name, tiers, updated_at) VALUES (gen_random_uuid(), $1, 'Club', 'CLUB', 'Points', '[]', now())`, [group]);
  await db.query(
    `INSERT INTO loyalty_members (id, property_group_id, program_id, guest_profile_id, member_number, tier, enrolled_at, updated_at)
     SELECT gen_random_uuid(), g.property_group_id, p.id, g.id, 'M' || substr(g.source_id, 4), 'base', now(), now()
     FROM guest_profiles g JOIN loyalty_programs p ON p.property_group_id = g.property_group_id
     WHERE g.property_group_id = $1 AND substr(g.source_id, 4)::int % 5 = 0`,
    [group],
  );
}

async function main() {
  const pg = await startTestPostgres();
  const url = pg.adminUrl();
  try {
    await migrate(url);
    const db = new Client({ connectionString: url });
    await db.connect();
    let t = Date.now();
    await seedGroup(db, G1, GUESTS, "Big");
    await seedGroup(db, G2, 1000, "Small");
    log(`seeded ${GUESTS} guests (+ reservations, members) in ${((Date.now() - t) / 1000).toFixed(0)} s`);
    t = Date.now();
    await db.query("VACUUM ANALYZE");
    log(`vacuum analyze ${((Date.now() - t) / 1000).toFixed(0)} s`);
    const n = Math.floor(GUESTS / 2);
    const queries: [string, string][] = [
      ["full name, common (≈ n/1,936 exact)", "Olivia Smith"],
      ["full name, reversed, accents", "nunez zoe"],
      ["full name prefixes", "Oli Smi"],
      ["one word (family or given)", "Müller"],
      ["one word prefix, very common", "S"],
      ["e-mail", `GUEST${n}@example.com`],
      ["phone, odd formatting", `+44 (0)77 ${String(n).padStart(8, "0").replace(/(\d{4})(\d{4})/, "$1-$2")}`],
      ["source id", `SRC${n}`],
      ["confirmation number", `conf${n}`],
      ["member number", `M${n - (n % 5)}`],
      ["nothing matches", "Xavier Nobody"],
    ];
    const scope = { propertyGroupId: G1, propertyId: null };
    const rows: string[] = ["| query | example | candidates | median ms | max ms | seq scan on guests |", "|---|---|---|---|---|---|"];
    for (const [label, query] of queries) {
      const statement = searchStatement(query, 5)((model, alias) => tenantSql(model, scope, alias));
      const run = () => db.query({ text: statement.text, values: statement.values as unknown[] });
      await run();
      const times: number[] = [];
      let found = 0;
      for (let i = 0; i < RUNS; i++) {
        const start = process.hrtime.bigint();
        found = (await run()).rowCount ?? 0;
        times.push(Number(process.hrtime.bigint() - start) / 1e6);
      }
      times.sort((a, b) => a - b);
      const plan = (await db.query({ text: `EXPLAIN ${statement.text}`, values: statement.values as unknown[] })).rows.map((r) => r["QUERY PLAN"]).join("\n");
      rows.push(
        `| ${label} | \`${query}\` | ${Math.min(found, 5)}${found > 5 ? "+" : ""} | ${times[RUNS / 2].toFixed(2)} | ${times[RUNS - 1].toFixed(2)} | ${/Seq Scan on guest_profiles/.test(plan) ? "yes" : "no"} |`,
      );
    }
    process.stdout.write(`guestSearch statement, ${GUESTS.toLocaleString("en")} guests in the group, ${RUNS} runs each\n\n${rows.join("\n")}\n`);
    await db.end();
  } finally {
    pg.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
