// The guest and consent rollups follow the writes (issue 44): after each kind of write one refresh pass
// adjusts only what the write touched (the delta path, not a whole rebuild), and every stored guest
// and consent answer still equals the live statement's, for each kept purpose, for the whole group and
// for a caller narrowed to a property. Random writes racing two refreshers end equal to live too.
import fc from "fast-check";
import { Client } from "pg";
import { createReaders } from "../../src/data/readers";
import { liveMetrics, type ConsentDimension, type GuestDimension } from "../../src/data/metrics";
import { consentFromRollups, guestsFromRollups } from "../../src/data/metric-rollups";
import { refreshRollups } from "../../src/rollups/refresh";
import type { Scope } from "../../src/data/scope";
import type { TestApp } from "../helpers/app";
import { closeRollupTestApp, startRollupTestApp } from "../helpers/rollups";

let t: TestApp;
let admin: Client;
beforeAll(async () => ({ t, admin } = await startRollupTestApp()));
afterAll(() => closeRollupTestApp(t, admin));

const A = () => t.manifest.groups.A;
const plain = (rows: unknown) => JSON.parse(JSON.stringify(rows));
const one = async <T extends Record<string, unknown>>(text: string, values: unknown[] = []): Promise<T> => (await admin.query<T>(text, values)).rows[0];
const all = async <T extends Record<string, unknown>>(text: string, values: unknown[] = []): Promise<T[]> => (await admin.query<T>(text, values)).rows;

/** One refresh pass over group A, which must take the delta path for the families it refreshes. */
async function deltaPass(): Promise<string[]> {
  const reports = (await refreshRollups(t.db, { groupId: A().id })).filter((r) => r.metric === "guests" || r.metric === "consent");
  for (const r of reports) expect({ metric: r.metric, rebuilt: r.rebuilt, path: r.path, repaired: r.repaired }).toEqual({ metric: r.metric, rebuilt: true, path: "touches", repaired: undefined });
  return reports.map((r) => r.metric).sort();
}

const GUEST_GROUPINGS: GuestDimension[][] = [[], ["property"], ["country"], ["loyalty_tier"], ["vip"], ["property", "country"], ["property", "loyalty_tier"], ["vip", "property"]];
const CONSENT_GROUPINGS: ConsentDimension[][] = [[], ["property"], ["month"], ["property", "month"]];

/** Every stored guest and consent answer equals the live statement's, per kept purpose, group-wide and narrowed. */
async function expectAgreement(groupId = A().id, propertyId = A().credentials.api_key_pinned.property_id): Promise<void> {
  const { variants } = await one<{ variants: string[] }>("SELECT variants FROM metric_rollup_state WHERE property_group_id = $1 AND metric = 'guests'", [groupId]);
  expect(variants.length).toBeGreaterThan(0);
  const scopes: Scope[] = [{ propertyGroupId: groupId, propertyId: null }, { propertyGroupId: groupId, propertyId }];
  for (const scope of scopes) {
    const r = createReaders(t.db, scope);
    for (const groupBy of GUEST_GROUPINGS) {
      for (const p of [null, ...variants.map((v) => ({ email: v, sms: v }))]) {
        const stored = await guestsFromRollups(r, groupBy, p);
        expect(stored).toBeDefined();
        expect({ scope, groupBy, p, rows: plain(stored) }).toEqual({ scope, groupBy, p, rows: plain(await liveMetrics(r).guests(groupBy, p)) });
      }
    }
    for (const purpose of variants) {
      for (const contactType of [null, "email", "phone"] as const) {
        for (const groupBy of CONSENT_GROUPINGS) {
          const stored = await consentFromRollups(r, purpose, contactType, groupBy);
          expect(stored).toBeDefined();
          expect({ scope, purpose, contactType, groupBy, rows: plain(stored) }).toEqual({ scope, purpose, contactType, groupBy, rows: plain(await liveMetrics(r).consent(purpose, contactType, groupBy)) });
        }
      }
    }
  }
}

// ---- writes, as a property system's sync makes them -------------------------------------------

let serial = 0;
const tag = () => `delta-${++serial}`;

/** A table's columns but `without`, read on `on`: a racing writer passes its own connection. */
async function columns(table: string, without: string[], on: Client = admin): Promise<string> {
  const { rows: [{ c }] } = await on.query<{ c: string }>(
    "SELECT string_agg(quote_ident(column_name), ', ' ORDER BY ordinal_position) AS c FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1 AND NOT (column_name = ANY($2::text[]))",
    [table, without],
  );
  return c;
}

/** A new guest profile like `like` (its property and integration), with its own e-mail and phone; returns its id. */
async function newGuest(like: string, fields: { email?: string | null; phone?: string | null; master?: string | null } = {}): Promise<string> {
  const cols = await columns("guest_profiles", ["id", "source_id", "email", "phone", "master_profile_id"]);
  const id = (await one<{ id: string }>("SELECT gen_random_uuid()::text AS id")).id;
  const n = tag();
  await admin.query(
    `INSERT INTO guest_profiles (id, source_id, email, phone, master_profile_id, ${cols}) SELECT $2, source_id || $3, $4, $5, $6, ${cols} FROM guest_profiles WHERE id = $1`,
    [like, id, `-${n}`, fields.email === undefined ? `  ${n}@Example.org ` : fields.email, fields.phone === undefined ? `+4477009${String(serial).padStart(5, "0")}` : fields.phone, fields.master ?? null],
  );
  return id;
}

async function observe(contactType: "email" | "phone", contactValue: string, purpose: string, status: "granted" | "withdrawn" | "denied", observedAt: string) {
  await admin.query(
    `INSERT INTO consent_observations (id, property_group_id, property_id, contact_type, contact_value, purpose, channel, status, source, observed_at)
     VALUES (gen_random_uuid(), $1, $2, $3, $4, $5, 'web', $6, 'test', $7)`,
    [A().id, A().credentials.api_key_pinned.property_id, contactType, contactValue, purpose, status, observedAt],
  );
}

/** A guest of group A with some property, e-mail and phone: the first, or one matching `where`. */
const aGuest = (where = "TRUE") =>
  one<{ id: string; email: string; phone: string | null; master_profile_id: string | null; property_id: string }>(
    `SELECT id, lower(btrim(email)) AS email, phone, master_profile_id, property_id FROM guest_profiles WHERE property_group_id = $1 AND email IS NOT NULL AND ${where} ORDER BY id LIMIT 1`,
    [A().id],
  );

describe("one pass after each kind of write takes the delta path and agrees with live", () => {
  test("the rollups start built and equal to live", async () => {
    await expectAgreement();
    // Both stored purposes are what the fixtures observe.
    const { variants } = await one<{ variants: string[] }>("SELECT variants FROM metric_rollup_state WHERE property_group_id = $1 AND metric = 'consent'", [A().id]);
    expect(variants).toEqual(expect.arrayContaining(["email_marketing", "sms_marketing"]));
  });

  test("a new guest", async () => {
    const like = await aGuest();
    await newGuest(like.id);
    expect(await deltaPass()).toEqual(["consent", "guests"]);
    await expectAgreement();
  });

  test("a guest merged into a master profile, then the master split", async () => {
    const master = await one<{ id: string }>("SELECT master_profile_id AS id FROM guest_profiles WHERE property_group_id = $1 AND master_profile_id IS NOT NULL GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1", [A().id]);
    const loner = await aGuest("master_profile_id IS NULL");
    await admin.query("UPDATE guest_profiles SET master_profile_id = $2 WHERE id = $1", [loner.id, master.id]);
    expect(await deltaPass()).toContain("guests");
    await expectAgreement();
    // The master split: its profiles leave it, one keeps it.
    await admin.query("UPDATE guest_profiles SET master_profile_id = NULL WHERE master_profile_id = $1 AND id <> $2", [master.id, loner.id]);
    expect(await deltaPass()).toContain("guests");
    await expectAgreement();
    // The last one leaves: the master counts nowhere.
    await admin.query("UPDATE guest_profiles SET master_profile_id = NULL WHERE id = $1", [loner.id]);
    expect(await deltaPass()).toContain("guests");
    await expectAgreement();
  });

  test("a country and VIP change", async () => {
    const g = await aGuest("vip_code IS NULL");
    await admin.query("UPDATE guest_profiles SET country_code = 'IS', vip_code = 'V1' WHERE id = $1", [g.id]);
    expect(await deltaPass()).toContain("guests");
    await expectAgreement();
  });

  test("a new loyalty membership, then a changed one", async () => {
    const g = await aGuest(`NOT EXISTS (SELECT 1 FROM loyalty_members lm WHERE lm.guest_profile_id = guest_profiles.id)`);
    const member = await one<{ id: string; program_id: string }>("SELECT id, program_id FROM loyalty_members WHERE property_group_id = $1 ORDER BY id LIMIT 1", [A().id]);
    const cols = await columns("loyalty_members", ["id", "member_number", "guest_profile_id", "master_profile_id", "enrolment_property_id", "tier", "status", "lifetime_points"]);
    const id = (await one<{ id: string }>("SELECT gen_random_uuid()::text AS id")).id;
    // Enrolled at the guest's property: a caller narrowed to it reads the membership (data/tenant.ts).
    await admin.query(
      `INSERT INTO loyalty_members (id, member_number, guest_profile_id, master_profile_id, enrolment_property_id, tier, status, lifetime_points, ${cols})
       SELECT $2, member_number || $3, $4, NULL, $5, 'titanium', 'active', 1, ${cols} FROM loyalty_members WHERE id = $1`,
      [member.id, id, `-${tag()}`, g.id, g.property_id],
    );
    expect(await deltaPass()).toEqual(["guests"]);
    await expectAgreement();
    await admin.query("UPDATE loyalty_members SET tier = 'obsidian', lifetime_points = 999999 WHERE id = $1", [id]);
    expect(await deltaPass()).toEqual(["guests"]);
    await expectAgreement();
    await admin.query("UPDATE loyalty_members SET status = 'suspended' WHERE id = $1", [id]);
    expect(await deltaPass()).toEqual(["guests"]);
    await expectAgreement();
  });

  test("consent observations: one that flips a contact point, one that does not, one for a point nobody has", async () => {
    const { contact_value: granted } = await one<{ contact_value: string }>(
      `SELECT s.contact_value FROM contact_consent_state s WHERE s.property_group_id = $1 AND s.contact_type = 'email' AND s.purpose = 'email_marketing' AND s.status = 'granted'
         AND EXISTS (SELECT 1 FROM consent_rollup_points p WHERE p.property_group_id = s.property_group_id AND p.contact_type = 'email' AND p.contact_value = s.contact_value)
       ORDER BY 1 LIMIT 1`,
      [A().id],
    );
    await observe("email", granted, "email_marketing", "withdrawn", "2025-03-04T10:00:00Z");
    expect(await deltaPass()).toEqual(["consent", "guests"]);
    await expectAgreement();
    // A later grant does not lift a withdrawal: nothing moves but the pass still agrees.
    await observe("email", granted, "email_marketing", "granted", "2026-01-02T10:00:00Z");
    expect(await deltaPass()).toEqual(["consent", "guests"]);
    await expectAgreement();
    // A later grant of a point granted before moves its month, not its status.
    const phone = await one<{ contact_value: string }>(
      `SELECT s.contact_value FROM contact_consent_state s WHERE s.property_group_id = $1 AND s.contact_type = 'phone' AND s.purpose = 'sms_marketing' AND s.status = 'granted' ORDER BY 1 LIMIT 1`,
      [A().id],
    );
    await observe("phone", phone.contact_value, "sms_marketing", "granted", "2026-02-27T23:30:00Z");
    expect(await deltaPass()).toEqual(["consent", "guests"]);
    await expectAgreement();
    await observe("email", "nobody-has-this@example.org", "sms_marketing", "denied", "2025-07-01T00:00:00Z");
    expect(await deltaPass()).toEqual(["consent", "guests"]);
    await expectAgreement();
  });

  test("a guest's e-mail and phone changed, then the guest deleted", async () => {
    const g = await aGuest("phone IS NOT NULL");
    await admin.query("UPDATE guest_profiles SET email = $2, phone = NULL WHERE id = $1", [g.id, ` ${g.email.toUpperCase()}x `]);
    expect(await deltaPass()).toEqual(["consent", "guests"]);
    await expectAgreement();
    // A point granted before the guest had it.
    await observe("email", `${g.email}x`, "email_marketing", "granted", "2025-05-05T05:05:00Z");
    expect(await deltaPass()).toEqual(["consent", "guests"]);
    await expectAgreement();
    const copy = await newGuest(g.id, { email: `${g.email}x` });
    expect(await deltaPass()).toEqual(["consent", "guests"]);
    await admin.query("DELETE FROM guest_profiles WHERE id = $1", [copy]);
    expect(await deltaPass()).toEqual(["consent", "guests"]);
    await expectAgreement();
  });

  test("a new purpose changes the kept purposes: the pair is rebuilt whole, with its facts", async () => {
    const g = await aGuest();
    await observe("email", g.email, "postal_survey", "granted", "2025-09-09T09:00:00Z");
    const reports = (await refreshRollups(t.db, { groupId: A().id })).filter((r) => r.metric === "guests" || r.metric === "consent");
    expect(reports.map((r) => [r.metric, r.path, r.repaired?.includes("consent purposes kept")])).toEqual([["consent", "whole", true], ["guests", "whole", true]]);
    const { variants } = await one<{ variants: string[] }>("SELECT variants FROM metric_rollup_state WHERE property_group_id = $1 AND metric = 'guests'", [A().id]);
    expect(variants).toContain("postal_survey");
    await expectAgreement();
    // And the next change is applied as a delta again, for the new purpose too.
    await observe("email", g.email, "postal_survey", "withdrawn", "2025-09-10T09:00:00Z");
    expect(await deltaPass()).toEqual(["consent", "guests"]);
    await expectAgreement();
  });
});

// ---- random writes, interleaved with refreshes --------------------------------------------------

/** One write of a random sync: `pick` and `n` choose the rows and values, so a run replays exactly. */
type Write = { kind: "guest" | "merge" | "country" | "loyalty" | "observe" | "email" | "delete"; pick: number; n: number };
const KINDS: Write["kind"][] = ["guest", "merge", "country", "loyalty", "observe", "email", "delete"];
const poolEmail = (n: number) => (n % 3 === 0 ? ` Pool${n % 7}@Example.org` : `pool${n % 7}@example.org`);
const poolPhone = (n: number) => `+44200000000${n % 5}`;

/** Runs one write on `c` (its own connection: writers race each other and the refreshers). */
async function write(c: Client, w: Write): Promise<void> {
  const q = async <T extends Record<string, unknown>>(text: string, values: unknown[]) => (await c.query<T>(text, values)).rows;
  const guests = await q<{ id: string; master_profile_id: string | null; property_id: string; test: boolean }>(
    "SELECT id, master_profile_id, property_id, source_id LIKE '%-delta-%' AS test FROM guest_profiles WHERE property_group_id = $1 ORDER BY id", [A().id]);
  const g = guests[w.pick % guests.length];
  const other = guests[w.n % guests.length];
  switch (w.kind) {
    case "guest":
      await newGuestOn(c, g.id, poolEmail(w.n), w.n % 2 ? poolPhone(w.n) : null);
      break;
    case "merge":
      // Into the other guest's master, or out of any when it has none.
      await c.query("UPDATE guest_profiles SET master_profile_id = $2 WHERE id = $1", [g.id, other.master_profile_id]);
      break;
    case "country":
      await c.query("UPDATE guest_profiles SET country_code = $2, vip_code = CASE WHEN vip_code IS NULL THEN 'V' END WHERE id = $1", [g.id, ["GB", "DE", "FR", null][w.n % 4]]);
      break;
    case "loyalty": {
      const [mine] = await q<{ id: string }>("SELECT id FROM loyalty_members WHERE guest_profile_id = $1 ORDER BY id LIMIT 1", [g.id]);
      if (mine && w.n % 3) {
        await c.query("UPDATE loyalty_members SET tier = $2, lifetime_points = $3, status = $4 WHERE id = $1",
          [mine.id, ["silver", "gold", "platinum"][w.n % 3], w.n * 10, w.n % 5 === 0 ? "suspended" : "active"]);
      } else {
        const cols = await columns("loyalty_members", ["id", "member_number", "guest_profile_id", "master_profile_id", "enrolment_property_id", "tier", "lifetime_points"], c);
        await c.query(
          `INSERT INTO loyalty_members (id, member_number, guest_profile_id, master_profile_id, enrolment_property_id, tier, lifetime_points, ${cols})
           SELECT gen_random_uuid(), member_number || '-' || gen_random_uuid(), $2, NULL, $3, $4, $5, ${cols} FROM loyalty_members WHERE property_group_id = $1 ORDER BY id LIMIT 1`,
          [A().id, g.id, g.property_id, ["silver", "gold", "platinum"][w.n % 3], w.n],
        );
      }
      break;
    }
    case "observe": {
      const email = w.pick % 2 === 0;
      await c.query(
        `INSERT INTO consent_observations (id, property_group_id, property_id, contact_type, contact_value, purpose, channel, status, source, observed_at)
         VALUES (gen_random_uuid(), $1, NULL, $2, $3, $4, 'web', $5, 'test', $6)`,
        [A().id, email ? "email" : "phone", email ? poolEmail(w.n).trim().toLowerCase() : poolPhone(w.n), w.pick % 3 ? "email_marketing" : "sms_marketing",
          ["granted", "granted", "withdrawn", "denied"][w.pick % 4], new Date(Date.UTC(2025, 0, 1) + w.n * 37 * 3_600_000).toISOString()],
      );
      break;
    }
    case "email":
      await c.query("UPDATE guest_profiles SET email = $2, phone = coalesce($3, phone) WHERE id = $1", [g.id, poolEmail(w.n), w.n % 2 ? poolPhone(w.n) : null]);
      break;
    case "delete": {
      const mine = guests.filter((x) => x.test);
      if (mine.length) await c.query("DELETE FROM guest_profiles WHERE id = $1", [mine[w.n % mine.length].id]);
      break;
    }
  }
}

async function newGuestOn(c: Client, like: string, email: string | null, phone: string | null): Promise<void> {
  const cols = await columns("guest_profiles", ["id", "source_id", "email", "phone"], c);
  await c.query(
    `INSERT INTO guest_profiles (id, source_id, email, phone, ${cols}) SELECT gen_random_uuid(), source_id || '-' || $2, $3, $4, ${cols} FROM guest_profiles WHERE id = $1`,
    [like, tag(), email, phone],
  );
}

const writeArb = fc.record({ kind: fc.constantFrom(...KINDS), pick: fc.nat(10_000), n: fc.nat(10_000) });

describe("under the tenant wall", () => {
  // The refresher reads and deletes a touched point's facts as its group (consent-family.ts), where
  // PostgreSQL may use only LEAKPROOF operators in an index condition: enum equality (contact_type) is
  // not. With the type second in the key, the value could only filter the group's whole range of the
  // index (every point of the group, per point and statement: 2,000,000 at a million guests); with the
  // value second, (group, value) is the seek (migration 20261129001000_consent_facts_value_first).
  it.each([
    ["consent_rollup_points", ["property_group_id", "contact_value", "contact_type", "property_id"]],
    ["contact_consent_state", ["property_group_id", "contact_value", "contact_type", "purpose"]],
  ])("%s is keyed by group and value before the contact type", async (table, key) => {
    const { columns } = await one<{ columns: string[] }>(
      `SELECT array_agg(a.attname::text ORDER BY k.n) AS columns FROM pg_index i
       CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, n)
       JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
       WHERE i.indrelid = $1::regclass AND i.indisprimary`, [table]);
    expect(columns).toEqual(key);
  });
});

describe("random writes and refreshes", () => {
  test("any interleaving of writes and delta passes ends equal to live (fast-check)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.oneof(writeArb, fc.constant("refresh" as const)), { minLength: 1, maxLength: 12 }), async (steps) => {
        for (const step of steps) {
          if (step === "refresh") await deltaPass();
          else await write(admin, step);
        }
        await deltaPass();
        await expectAgreement();
      }),
      { numRuns: 12 },
    );
  });

  test("four writers racing two refreshers end equal to live", async () => {
    const writers = await Promise.all([1, 2, 3, 4].map(async () => {
      const c = new Client({ connectionString: t.databaseUrl });
      await c.connect();
      return c;
    }));
    let writing = true;
    const passes = { delta: 0 };
    const refresher = async () => {
      while (writing) {
        for (const r of await refreshRollups(t.db, { groupId: A().id })) if (r.rebuilt) passes.delta++;
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    };
    try {
      const refreshers = [refresher(), refresher()];
      let seed = 7;
      const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) % 10_000;
      await Promise.all(writers.map(async (c) => {
        for (let i = 0; i < 40; i++) {
          // Some writes in one transaction of two statements: a change committed mid-pass.
          const pair = next() % 4 === 0;
          if (pair) await c.query("BEGIN");
          await write(c, { kind: KINDS[next() % KINDS.length], pick: next(), n: next() });
          if (pair) {
            await write(c, { kind: "observe", pick: next(), n: next() });
            await c.query("COMMIT");
          }
        }
      }));
      writing = false;
      await Promise.all(refreshers);
    } finally {
      writing = false;
      await Promise.all(writers.map((c) => c.end()));
    }
    expect(passes.delta).toBeGreaterThan(0);
    await deltaPass();
    const { n } = await one<{ n: number }>("SELECT count(*)::int AS n FROM metric_rollup_changes WHERE property_group_id = $1 AND metric IN ('guests', 'consent')", [A().id]);
    expect(n).toBe(0);
    await expectAgreement();
  });
});
