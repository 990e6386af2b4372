// The demo data itself: amounts signed as the contract says, dates around the day it is loaded
// (the same rows all that day), and progress on stderr for loads big enough to wait on.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { resolveSessionKey } from "../../src/auth/session";
import { deliverySecretKey } from "../../src/delivery/run";
import { loadFixtures, type FixtureManifest } from "../../src/fixtures";
import { startTestApp, type TestApp } from "../helpers/app";
import { TEST_FIXTURE_DATE } from "../helpers/own-postgres";

const ROOT = path.resolve(__dirname, "../..");
const NODE = path.join(ROOT, "node_modules/.bin/node");

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

/** Loads the fixture tenants of `seed` into this test's database (other seeds' tenants stay). */
async function load(seed: number, anchorDate?: string): Promise<FixtureManifest> {
  const prisma = t.db.primary;
  return loadFixtures(prisma, {
    seed,
    guests: 40,
    anchorDate,
    sessionKey: await resolveSessionKey(t.services.config.session, prisma),
    deliveryKey: await deliverySecretKey(t.services.config, prisma),
    progress: () => undefined,
  });
}

const sql = <T = Record<string, unknown>>(text: string, ...params: unknown[]) => t.admin.$queryRawUnsafe<T[]>(text, ...params);
const groupIds = (m: FixtureManifest) => [m.groups.A.id, m.groups.B.id];
const todayUtc = () => new Date().toISOString().slice(0, 10);

describe("demo amounts", () => {
  it("are signed per kind as the contract says: charges positive, payments, refunds and goodwill negative", async () => {
    const rows = await sql<{ kind: string; category: string; n: number; min: bigint; max: bigint }>(
      `SELECT kind::text, category, count(*)::int AS n, min(amount_minor) AS min, max(amount_minor) AS max
         FROM transactions WHERE property_group_id = ANY($1::uuid[]) GROUP BY 1, 2 ORDER BY 1, 2`,
      groupIds(t.manifest),
    );
    const kinds = new Set(rows.map((r) => r.kind));
    expect([...kinds].sort()).toEqual(["adjustment", "charge", "payment", "refund"]);
    for (const r of rows) {
      if (r.kind === "charge") expect({ ...r, positive: r.min > 0n }).toMatchObject({ positive: true });
      else expect({ ...r, negative: r.max < 0n }).toMatchObject({ negative: true });
    }
  });

  it("balance every settled or cancelled folio, so a spend total means what it says", async () => {
    // Checked out, no-show and cancelled folios net to zero: goodwill ones too (charge, a credit of a
    // tenth, a payment of the rest).
    const folios = await sql<{ id: string; status: string; balance: string; goodwill: boolean }>(
      `SELECT r.id, r.status::text, sum(x.amount_minor)::text AS balance, bool_or(x.category = 'goodwill') AS goodwill
         FROM reservations r JOIN transactions x ON x.reservation_id = r.id
        WHERE r.property_group_id = ANY($1::uuid[]) AND r.status IN ('checked_out', 'no_show', 'cancelled')
        GROUP BY r.id, r.status`,
      groupIds(t.manifest),
    );
    expect(folios.filter((f) => f.goodwill).length).toBeGreaterThan(0);
    expect(folios.filter((f) => f.balance !== "0")).toEqual([]);
    // Settled reservations all have a folio.
    const [{ bare }] = await sql<{ bare: number }>(
      `SELECT count(*)::int AS bare FROM reservations r WHERE r.property_group_id = ANY($1::uuid[])
          AND r.status IN ('checked_out', 'no_show') AND NOT EXISTS (SELECT 1 FROM transactions x WHERE x.reservation_id = r.id)`,
      groupIds(t.manifest),
    );
    expect(bare).toBe(0);
    // Spend (charges, adjustments and refunds) is what the folios say, with no sign fixing.
    const master = t.manifest.groups.A.master_with_two_guests;
    const [expected] = await sql<{ currency: string; total: bigint }>(
      `SELECT currency, sum(amount_minor)::bigint AS total FROM transactions
        WHERE kind <> 'payment' AND guest_profile_id IN (SELECT id FROM guest_profiles WHERE master_profile_id = $1::uuid)
        GROUP BY currency`,
      master,
    );
    const res = await t.api
      .post("/graphql")
      .set("Authorization", `Bearer ${t.manifest.groups.A.credentials.api_key}`)
      .send({ query: `{ guestContext(masterProfileId: "${master}") { spend { byCurrency { currency totalMinor } } } }` });
    expect(res.body.data.guestContext.spend.byCurrency).toEqual([{ currency: expected.currency, totalMinor: Number(expected.total) }]);
  });
});

describe("demo dates", () => {
  let today: FixtureManifest;
  beforeAll(async () => {
    today = await load(31);
  });

  it("are anchored to today's UTC date unless pinned; the test template is pinned", () => {
    expect(today.anchor_date).toBe(todayUtc());
    expect(t.manifest.anchor_date).toBe(TEST_FIXTURE_DATE);
  });

  it("hold past, in-house and upcoming stays around the anchor day, each with a status that fits", async () => {
    const rows = await sql<{ phase: string; kind: string; status: string; n: number }>(
      `SELECT CASE WHEN departure_date < $2::date AND kind = 'stay' OR arrival_date < $2::date AND kind <> 'stay' THEN 'past'
                   WHEN arrival_date > $2::date THEN 'upcoming' WHEN kind = 'stay' THEN 'in_house' ELSE 'today' END AS phase,
              CASE WHEN kind = 'stay' THEN 'stay' ELSE 'other' END AS kind, status::text, count(*)::int AS n
         FROM reservations WHERE property_group_id = ANY($1::uuid[]) GROUP BY 1, 2, 3`,
      groupIds(today),
      today.anchor_date,
    );
    const statuses = (phase: string, kind = "stay") => [...new Set(rows.filter((r) => r.phase === phase && r.kind === kind).map((r) => r.status))].sort();
    expect(statuses("past")).toEqual(["cancelled", "checked_out", "no_show"]);
    expect(statuses("in_house")).toEqual(["checked_in"]); // arrived before the anchor day, leaving after it
    expect(statuses("upcoming")).toEqual(["confirmed", "tentative"]);
    expect(statuses("today", "other")).toEqual(["confirmed"]); // tonight's tables
    const [inHouse] = await sql<{ n: number }>(
      `SELECT count(*)::int AS n FROM reservations
        WHERE property_group_id = ANY($1::uuid[]) AND status = 'checked_in' AND arrival_date < $2::date AND departure_date > $2::date`,
      groupIds(today),
      today.anchor_date,
    );
    expect(inHouse.n).toBeGreaterThan(0);
  });

  it("never lie after the moment they are loaded (only arrivals, starts and expiries are ahead)", async () => {
    const [latest] = await sql<{ late: string[] }>(
      `SELECT array_remove(ARRAY[
          (SELECT 'reservations' FROM reservations WHERE property_group_id = ANY($1::uuid[])
             AND greatest(booked_at, created_at, updated_at, cancelled_at) > now() LIMIT 1),
          (SELECT 'transactions' FROM transactions WHERE property_group_id = ANY($1::uuid[]) AND greatest(occurred_at, created_at) > now() LIMIT 1),
          (SELECT 'events' FROM events WHERE property_group_id = ANY($1::uuid[]) AND occurred_at > now() LIMIT 1),
          (SELECT 'guests' FROM guest_profiles WHERE property_group_id = ANY($1::uuid[]) AND updated_at > now() LIMIT 1),
          (SELECT 'reviews' FROM reviews WHERE property_group_id = ANY($1::uuid[]) AND greatest(published_at, responded_at) > now() LIMIT 1),
          (SELECT 'loyalty' FROM loyalty_members WHERE property_group_id = ANY($1::uuid[]) AND updated_at > now() LIMIT 1)
        ], NULL) AS late`,
      groupIds(today),
    );
    expect(latest.late).toEqual([]);
  });

  it("make the date examples of docs/using-the-api.md return rows: arrivals from today, guests in house", async () => {
    const get = (query: string) =>
      t.api.get(`/v1/reservations?${query}`).set("Authorization", `Bearer ${today.groups.A.credentials.api_key}`);
    const upcoming = await get(`arrival_from=${todayUtc()}&status=confirmed&limit=5`);
    expect(upcoming.status).toBe(200);
    expect(upcoming.body.data.length).toBeGreaterThan(0);
    for (const r of upcoming.body.data) expect(r.arrival_date >= todayUtc()).toBe(true);
    const inHouse = await get("status=checked_in&limit=5");
    expect(inHouse.body.data.length).toBeGreaterThan(0);
    for (const r of inHouse.body.data) expect(r.departure_date > todayUtc()).toBe(true);
  });

  it("give the same rows for the same seed and day, and move whole days with the anchor", async () => {
    const anchor = "2026-06-15";
    const snapshot = async (m: FixtureManifest) => {
      const [row] = await sql<{ data: string }>(
        `SELECT md5(string_agg(x::text, ',' ORDER BY x::text)) AS data FROM (
           SELECT r::text AS x FROM reservations r WHERE property_group_id = ANY($1::uuid[])
           UNION ALL SELECT x::text FROM transactions x WHERE property_group_id = ANY($1::uuid[])
           UNION ALL SELECT g::text FROM guest_profiles g WHERE property_group_id = ANY($1::uuid[])
           UNION ALL SELECT c::text FROM consent_observations c WHERE property_group_id = ANY($1::uuid[])
           UNION ALL SELECT v::text FROM reviews v WHERE property_group_id = ANY($1::uuid[])
           UNION ALL SELECT l::text FROM loyalty_members l WHERE property_group_id = ANY($1::uuid[])) AS s`,
        groupIds(m),
      );
      const dates = await sql<{ id: string; booked: number; arrival: string; status: string }>(
        `SELECT id, extract(epoch FROM booked_at)::float8 AS booked, arrival_date::text AS arrival, status::text
           FROM reservations WHERE property_group_id = ANY($1::uuid[]) ORDER BY id`,
        groupIds(m),
      );
      return { data: row.data, dates };
    };
    const first = await snapshot(await load(32, anchor));
    const again = await snapshot(await load(32, anchor));
    expect(again.data).toBe(first.data);

    const nextDay = await snapshot(await load(32, "2026-06-16"));
    expect(nextDay.data).not.toBe(first.data);
    expect(nextDay.dates.map((r) => r.id)).toEqual(first.dates.map((r) => r.id));
    nextDay.dates.forEach((r, i) => {
      const before = first.dates[i];
      expect({ id: r.id, status: r.status, booked: r.booked - before.booked }).toEqual({ id: before.id, status: before.status, booked: 86_400 });
      // Around the anchor, arrival dates are whole days from it; past stays follow their booking's local date.
      if (["checked_in", "confirmed", "tentative"].includes(r.status)) {
        expect(Date.parse(r.arrival) - Date.parse(before.arrival)).toBe(86_400_000);
      }
    });
  });
});

describe("gcs fixtures", () => {
  const gcs = async (guests: number, env: Record<string, string> = {}) => {
    const out = path.join(mkdtempSync(path.join(os.tmpdir(), "gcs-fx-")), "m.json");
    const { stderr } = await promisify(execFile)(NODE, [path.join(ROOT, "bin/gcs.js"), "fixtures", "--out", out, "--seed", "41", "--guests", String(guests)], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: t.databaseUrl, LOG_LEVEL: "silent", ...env },
      timeout: 170_000,
    });
    return { stderr, manifest: JSON.parse(readFileSync(out, "utf8")) as FixtureManifest };
  };

  it("shows guests per second and the time left on stderr for a big load, in plain lines when not a terminal", async () => {
    const { stderr } = await gcs(5_000);
    const lines = stderr.trim().split("\n");
    const rates = lines.filter((l) => /guests [\d,]+\/10,000 \(\d+\.\d%\), [\d,]+ guests\/s, about \d+(s|m\d\ds|h\d\dm) left$/.test(l));
    expect({ rateLines: rates.length > 0, stderr }).toEqual({ rateLines: true, stderr });
    expect(lines).toContainEqual(expect.stringMatching(/guests 10,000\/10,000 loaded in \d+(s|m\d\ds), [\d,]+ guests\/s$/));
    expect(stderr).not.toMatch(/[\r\x1b]/);
  }, 180_000);

  it("keeps a small load to a few phase lines, with no rate; GCS_FIXTURE_DATE pins the dates", async () => {
    const { stderr, manifest } = await gcs(300, { GCS_FIXTURE_DATE: "2026-03-14" });
    expect(stderr).not.toMatch(/guests\/s|left/);
    expect(stderr.trim().split("\n").length).toBeLessThan(15);
    expect(stderr).toContain("dates anchored to 2026-03-14");
    expect(manifest.anchor_date).toBe("2026-03-14");
    const [latest] = await sql<{ arrival: string }>(
      `SELECT max(arrival_date)::text AS arrival FROM reservations WHERE property_group_id = $1::uuid AND status = 'checked_in'`,
      manifest.groups.A.id,
    );
    expect(latest.arrival < "2026-03-14").toBe(true);
  }, 120_000);

  it("refuses a GCS_FIXTURE_DATE that is not a day, in one line", async () => {
    const err = await gcs(12, { GCS_FIXTURE_DATE: "2026-02-30" }).catch((e) => e);
    expect(err.code).toBe(1);
    expect(String(err.stderr).trim().split("\n").at(-1)).toMatch(/^gcs: GCS_FIXTURE_DATE must be a date as YYYY-MM-DD/);
  }, 120_000);
});
