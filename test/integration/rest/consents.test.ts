// Consent precedence (spec 1.5) through /v1/consents and /v1/consents/effective.
import { randomUUID } from "node:crypto";
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
