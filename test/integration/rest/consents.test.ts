// Consent precedence (spec 1.5) through /v1/consents and /v1/consents/effective.
import { randomUUID } from "node:crypto";
import { Client } from "pg";
import { consentKeysStatement } from "../../../src/data/consents";
import { tenantSql } from "../../../src/data/tenant";
import { startTestApp, type TestApp } from "../../helpers/app";
import { walk } from "../../helpers/walk";

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const A = () => t.manifest.groups.A;
const get = (path: string, token = A().credentials.api_key) => t.api.get(path).set("Authorization", `Bearer ${token}`);
const effective = async (contact: string, purpose: string, headers: Record<string, string> = {}) => {
  const res = await get(`/v1/consents/effective?contact_value=${encodeURIComponent(contact)}&purpose=${purpose}`).set(headers);
  expect(res.status).toBe(200);
  return res.body.data as { status: string; decided_by: { status: string; id: string } | null; observation_count: number }[];
};

describe("consent precedence", () => {
  it("a later withdrawal at another property and source beats an earlier grant", async () => {
    const { contact_value, purpose } = A().consent_conflict;
    const observations = await t.admin.consentObservation.findMany({ where: { propertyGroupId: A().id, contactValue: contact_value, purpose } });
    // The fixture's conflict really spans two properties and two sources.
    expect(new Set(observations.map((o) => o.status))).toEqual(new Set(["granted", "withdrawn"]));
    expect(new Set(observations.map((o) => o.propertyId)).size).toBe(2);
    expect(new Set(observations.map((o) => o.integrationId)).size).toBe(2);

    const [row] = await effective(contact_value, purpose);
    expect(row).toMatchObject({ status: "withdrawn", observation_count: observations.length });
    expect(row.decided_by!.status).toBe("withdrawn");

    // Seen from the property where only the grant was recorded, the group-wide withdrawal still wins.
    const grantedAt = observations.find((o) => o.status === "granted")!.propertyId!;
    const [narrowed] = await effective(contact_value, purpose, { "X-Property-Id": grantedAt });
    expect(narrowed.status).toBe("withdrawn");
  });

  it("a grant with nothing against it is granted; nothing observed is simply absent (unknown)", async () => {
    const { contact_value, purpose } = A().consent_granted_only;
    expect((await effective(contact_value, purpose))[0].status).toBe("granted");
    expect(await effective("nobody@example.invalid", purpose)).toEqual([]);
  });

  it("withdrawn beats granted whatever the order: a grant recorded after a denial stays denied", async () => {
    const contact = `late-grant-${randomUUID()}@example.com`;
    const base = { propertyGroupId: A().id, contactType: "email" as const, contactValue: contact, purpose: "email_marketing", channel: "email", source: "test" };
    await t.admin.consentObservation.createMany({
      data: [
        { ...base, id: randomUUID(), status: "denied", observedAt: new Date("2026-01-01T00:00:00Z"), propertyId: A().properties[0] },
        { ...base, id: randomUUID(), status: "granted", observedAt: new Date("2026-06-01T00:00:00Z"), propertyId: A().properties[1] },
      ],
    });
    const [row] = await effective(contact, "email_marketing");
    expect(row.status).toBe("denied");
  });

  it("lists observations by contact and effective statuses for a guest's contact points", async () => {
    const { contact_value } = A().consent_conflict;
    const res = await get(`/v1/consents?email=${encodeURIComponent(contact_value.toUpperCase())}`);
    expect(res.body.data.length).toBeGreaterThanOrEqual(2);
    for (const o of res.body.data) expect(o.contact_value).toBe(contact_value);
    const guest = await t.admin.guestProfile.findFirstOrThrow({ where: { propertyGroupId: A().id, email: contact_value } });
    const byGuest = await get(`/v1/consents/effective?guest_profile_id=${guest.id}`);
    expect(byGuest.body.data.map((r: { contact_value: string }) => r.contact_value)).toContain(contact_value);
  });

  it("walks effective consents with limit=2 without duplicates, and keeps groups apart", async () => {
    const { rows, pages } = await walk<{ contact_value: string; purpose: string; contact_type: string }>(t, "/v1/consents/effective?limit=2", A().credentials.api_key);
    expect(pages).toBeGreaterThan(2);
    const keys = rows.map((r) => `${r.contact_type}:${r.contact_value}:${r.purpose}`);
    expect(new Set(keys).size).toBe(keys.length);
    const distinct = await t.admin.consentObservation.groupBy({ by: ["contactType", "contactValue", "purpose"], where: { propertyGroupId: A().id } });
    expect(keys.length).toBe(distinct.length);
    // Group B may know the same e-mail address, but only through its own observations.
    const b = await walk<{ decided_by: { id: string } }>(t, "/v1/consents/effective?limit=500", t.manifest.groups.B.credentials.api_key);
    const aObservations = new Set(
      (await t.admin.consentObservation.findMany({ where: { propertyGroupId: A().id }, select: { id: true } })).map((o) => o.id),
    );
    expect(b.rows.length).toBeGreaterThan(0);
    expect(b.rows.filter((r) => aObservations.has(r.decided_by.id))).toEqual([]);
  });
});

describe("the effective consents walk at depth", () => {
  it("a page 90 % into 5,000 more keys starts at its position in the index (no scan of the keys before it)", async () => {
    const c = new Client({ connectionString: t.databaseUrl });
    await c.connect();
    try {
      await c.query(
        `INSERT INTO consent_observations (id, property_group_id, contact_type, contact_value, purpose, channel, status, source, observed_at)
         SELECT gen_random_uuid(), $1, 'email', 'walk' || lpad(n::text, 5, '0') || '@example.invalid', 'email_marketing', 'web', 'granted', 'test', now()
         FROM generate_series(1, 5000) n`,
        [A().id],
      );
      await c.query("ANALYZE consent_observations");
      const deep = ["walk04500@example.invalid", "email_marketing", "email"];
      const statement = consentKeysStatement(A().id, undefined, undefined, deep, 100)((model, alias) => tenantSql(model, { propertyGroupId: A().id, propertyId: null }, alias));
      // As the service runs it: the tenant role and the caller's group (db/tenant-pool.ts).
      await c.query("BEGIN");
      await c.query("SELECT set_config('role', 'gcs_tenant', true), set_config('gcs.group_id', $1, true)", [A().id]);
      const { rows } = await c.query({ text: `EXPLAIN (ANALYZE, COSTS OFF) ${statement.text}`, values: statement.values as unknown[] });
      // The page is the 100 keys after the position, by the key's own comparison.
      const { rows: page } = await c.query({ text: statement.text, values: statement.values as unknown[] });
      const { rows: want } = await c.query(
        `SELECT DISTINCT contact_value AS "contactValue", purpose, contact_type::text AS "contactType" FROM consent_observations
         WHERE property_group_id = $1 AND (contact_value, purpose, contact_type::text) > ($2, $3, $4) ORDER BY 1, 2, 3 LIMIT 100`,
        [A().id, ...deep],
      );
      await c.query("ROLLBACK");
      expect(page).toEqual(want);
      expect(page[0]).toEqual({ contactValue: "walk04501@example.invalid", purpose: "email_marketing", contactType: "email" });
      const plan = rows.map((r) => r["QUERY PLAN"]).join("\n");
      expect(plan).toMatch(/Index Cond: .*ROW\(property_group_id, contact_value, purpose\) >= ROW/);
      // Only the rows of the page (and a key's few observations) are read, not the 4,500 keys before it.
      const removed = [...plan.matchAll(/Rows Removed by Filter: (\d+)/g)].map((m) => Number(m[1]));
      expect(Math.max(0, ...removed)).toBeLessThan(100);
    } finally {
      await c.end();
    }
  });
});
