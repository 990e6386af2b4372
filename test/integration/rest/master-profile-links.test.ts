// Why profiles merged (issue 42, docs/identity-resolution.md): a master profile's links on every door
// (REST GET /v1/master-profiles/{id}/links, GraphQL MasterProfile.links and masterProfileLinks, MCP
// explain_merge and guest_context), tenant isolation per group and per pinned property, batching, and
// the evidence: for every link of the test fixtures and of the demo's data (`gcs serve` loads
// loadFixtures with seed 1 and 300 guests), the fields it says matched are equal in the two profiles.
import { loadFixtures, type FixtureManifest } from "../../../src/fixtures";
import { loadConfig } from "../../../src/config";
import { resolveSessionKey } from "../../../src/auth/session";
import { deliverySecretKey } from "../../../src/delivery/run";
import { normaliseContact } from "../../../src/consent/precedence";
import { startTestApp, type TestApp } from "../../helpers/app";
import { TEST_FIXTURE_DATE } from "../../helpers/own-postgres";
import { readFileSync } from "fs";
import { join } from "path";
import { ROUTES } from "../../../src/api/descriptions";

let t: TestApp;
/** The demo's data, loaded beside the test fixtures: 300 guests per group, so 50 master profiles. */
let demo: FixtureManifest;

beforeAll(async () => {
  // Statement counts are compared between requests: each looks its token up (none remembered:
  // auth/remembered-credentials.ts, covered by remembered-credentials.test.ts).
  t = await startTestApp({ GCS_REMEMBER_CREDENTIALS: "false" });
  const config = loadConfig({});
  demo = await loadFixtures(t.db.primary, {
    seed: 1,
    guests: 300,
    anchorDate: TEST_FIXTURE_DATE,
    sessionKey: await resolveSessionKey(config.session, t.db.primary),
    deliveryKey: await deliverySecretKey(config, t.db.primary),
    progress: () => undefined,
  });
}, 120_000);
afterAll(() => t.close());

const A = () => t.manifest.groups.A;
const B = () => t.manifest.groups.B;
const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

const links = (masterId: string, token = A().credentials.api_key) => t.api.get(`/v1/master-profiles/${masterId}/links`).set(bearer(token));

const gql = (query: string, variables: Record<string, unknown>, token = A().credentials.api_key) =>
  t.api.post("/graphql").set(bearer(token)).set("Content-Type", "application/json").send({ query, variables });

async function mcp(name: string, args: Record<string, unknown>, token = A().credentials.api_key, headers: Record<string, string> = {}) {
  const res = await t.api
    .post("/mcp")
    .set(bearer(token))
    .set(headers)
    .set("Accept", "application/json, text/event-stream")
    .send({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } });
  expect(res.status).toBe(200);
  const result = res.body.result as { isError?: boolean; content: { text: string }[]; structuredContent?: Record<string, any> }; // eslint-disable-line @typescript-eslint/no-explicit-any
  return { isError: result.isError === true, text: result.content[0].text, body: result.isError ? undefined : JSON.parse(result.content[0].text) };
}

interface GuestSide {
  id: string;
  master_profile_id: string | null;
  property_id: string;
  integration_id: string;
  given_name: string | null;
  family_name: string | null;
  email: string | null;
  phone: string | null;
  birth_date: string | null;
}

/** Guest profiles straight from the database (outside the wall), by id. */
async function guestRows(ids: string[]): Promise<Map<string, GuestSide>> {
  const { rows } = await t.adminPool.query<GuestSide>(
    `SELECT id::text, master_profile_id::text, property_id::text, integration_id::text, given_name, family_name, email, phone,
       to_char(birth_date, 'YYYY-MM-DD') AS birth_date FROM guest_profiles WHERE id = ANY($1::uuid[])`,
    [ids],
  );
  return new Map(rows.map((r) => [r.id, r]));
}

/** Two guests of the same master profile of group A of the test fixtures, the first its first profile. */
async function pairOf(masterId: string): Promise<[string, string]> {
  const { rows } = await t.adminPool.query<{ guest: string; linked: string | null }>(
    "SELECT guest_profile_id::text AS guest, linked_guest_profile_id::text AS linked FROM master_profile_links WHERE master_profile_id = $1::uuid ORDER BY linked_at, id",
    [masterId],
  );
  return [rows[0].guest, rows[1].guest];
}

describe("GET /v1/master-profiles/{id}/links", () => {
  it("answers one link per guest profile, oldest first, with the rule, evidence, confidence and both sides' sources", async () => {
    const master = A().master_with_two_guests;
    const res = await links(master);
    expect(res.status).toBe(200);
    const data = res.body.data as Record<string, any>[]; // eslint-disable-line @typescript-eslint/no-explicit-any
    expect(data).toHaveLength(2);
    const [first, second] = data;
    expect(first).toMatchObject({ master_profile_id: master, linked_guest_profile_id: null, rule: "first_profile", matched_fields: [], confidence: 1, linked_guest: null });
    expect(second).toMatchObject({ master_profile_id: master, linked_guest_profile_id: first.guest_profile_id, linked_by: "identity_resolution" });
    // Master 0 of the fixtures was matched by e-mail (b % 5 = 0).
    expect(second.rule).toBe("exact_email");
    expect(second.confidence).toBeGreaterThan(0);
    expect(second.confidence).toBeLessThanOrEqual(1);
    expect(second.linked_at >= first.linked_at).toBe(true);
    const guests = await guestRows([first.guest_profile_id, second.guest_profile_id]);
    expect(second.matched_fields).toEqual([{ field: "email", value: guests.get(second.guest_profile_id)!.email!.trim().toLowerCase() }]);
    // Each side names the guest profile's own integration, its source system and property.
    const providers = new Map(A().integrations.map((i) => [i.id, i.provider]));
    for (const [side, id] of [[second.guest, second.guest_profile_id], [second.linked_guest, first.guest_profile_id], [first.guest, first.guest_profile_id]]) {
      const g = guests.get(id)!;
      expect(side).toEqual({ integration_id: g.integration_id, source_system: providers.get(g.integration_id), property_id: g.property_id });
    }
    // The pair spans two properties (the fixture contract's master profile).
    expect(second.guest.property_id).not.toBe(second.linked_guest.property_id);
  });

  it("orders by linked_at, then id", async () => {
    const res = await links(A().master_with_two_guests);
    const keys = (res.body.data as { linked_at: string; id: string }[]).map((l) => [l.linked_at, l.id] as const);
    const sorted = [...keys].sort((x, y) => (x[0] === y[0] ? (x[1] < y[1] ? -1 : 1) : x[0] < y[0] ? -1 : 1));
    expect(keys).toEqual(sorted);
  });

  it("is an empty list for a master profile whose links were never recorded", async () => {
    const id = "0f0e0d0c-0b0a-4908-8706-050403020100";
    await t.adminPool.query("INSERT INTO master_profiles (id, property_group_id, given_name) VALUES ($1, $2, 'Unlinked')", [id, A().id]);
    try {
      const res = await links(id);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ data: [] });
    } finally {
      await t.adminPool.query("DELETE FROM master_profiles WHERE id = $1", [id]);
    }
  });

  it("is 404 not_found for an unknown id and for another group's master profile, 400 invalid_request for a malformed id (as GET /v1/master-profiles/{id})", async () => {
    const unknown = await links("00000000-0000-4000-8000-000000000000");
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toBe("not_found");
    const foreign = await links(B().master_with_two_guests);
    expect(foreign.status).toBe(404);
    expect(foreign.body.error).toBe("not_found");
    for (const bad of ["not-a-uuid", "123"]) {
      const res = await links(bad);
      const sibling = await t.api.get(`/v1/master-profiles/${bad}`).set(bearer(A().credentials.api_key));
      expect(res.status).toBe(400);
      expect(res.body.error).toBe("invalid_request");
      expect(sibling.status).toBe(res.status);
    }
  });

  it("needs read:guests and a credential", async () => {
    const limited = await links(A().master_with_two_guests, A().credentials.api_key_limited); // read:guests only
    expect(limited.status).toBe(200);
    const none = await t.api.get(`/v1/master-profiles/${A().master_with_two_guests}/links`);
    expect(none.status).toBe(401);
  });

  it("group B's credential sees group B's links only", async () => {
    const res = await links(B().master_with_two_guests, B().credentials.api_key);
    expect(res.status).toBe(200);
    const ids = (res.body.data as { guest_profile_id: string }[]).map((l) => l.guest_profile_id);
    const guests = await guestRows(ids);
    expect(ids).toHaveLength(2);
    for (const id of ids) expect(guests.get(id)!.master_profile_id).toBe(B().master_with_two_guests);
    const { rows } = await t.adminPool.query("SELECT property_group_id::text AS g FROM master_profile_links WHERE guest_profile_id = ANY($1::uuid[])", [ids]);
    expect(rows.every((r) => r.g === B().id)).toBe(true);
  });

  it("a credential pinned to one property sees the links of that property's guest profiles, and no source of a side outside it", async () => {
    const { token, property_id: pinned } = A().credentials.api_key_pinned;
    const all = (await links(A().master_with_two_guests)).body.data as { guest_profile_id: string; guest: { property_id: string } }[];
    const atPinned = all.filter((l) => l.guest.property_id === pinned);
    expect(atPinned.length).toBe(1); // the pair spans two properties
    const res = await links(A().master_with_two_guests, token);
    expect(res.status).toBe(200);
    const seen = res.body.data as { guest_profile_id: string; guest: { property_id: string }; linked_guest: { property_id: string } | null }[];
    expect(seen.map((l) => l.guest_profile_id)).toEqual(atPinned.map((l) => l.guest_profile_id));
    for (const l of seen) {
      expect(l.guest.property_id).toBe(pinned);
      if (l.linked_guest) expect(l.linked_guest.property_id).toBe(pinned);
    }
    // The same through X-Property-Id on the group's key.
    const narrowed = await links(A().master_with_two_guests).set("X-Property-Id", pinned);
    expect(narrowed.body.data.map((l: { guest_profile_id: string }) => l.guest_profile_id)).toEqual(atPinned.map((l) => l.guest_profile_id));
    // A master with no profile at the pinned property is not found.
    const { rows } = await t.adminPool.query<{ id: string }>(
      `SELECT m.id::text AS id FROM master_profiles m WHERE m.property_group_id = $1::uuid
         AND NOT EXISTS (SELECT 1 FROM guest_profiles g WHERE g.master_profile_id = m.id AND g.property_id = $2::uuid) LIMIT 1`,
      [A().id, pinned],
    );
    expect((await links(rows[0].id, token)).status).toBe(404);
  });
});

const LINK_FIELDS = `id masterProfileId guestProfileId linkedGuestProfileId rule matchedFields { field value } confidence
  guest { integrationId sourceSystem propertyId } linkedGuest { integrationId sourceSystem propertyId } linkedAt linkedBy`;

describe("GraphQL MasterProfile.links and masterProfileLinks", () => {
  it("MasterProfile.links and masterProfileLinks answer what REST answers", async () => {
    const master = A().master_with_two_guests;
    const res = await gql(`query($id: UUID!) { masterProfile(id: $id) { links { ${LINK_FIELDS} } } masterProfileLinks(masterProfileId: $id) { id } }`, { id: master });
    expect(res.body.errors).toBeUndefined();
    const rest = (await links(master)).body.data as { id: string; rule: string; matched_fields: unknown }[];
    const nested = res.body.data.masterProfile.links as { id: string; rule: string; matchedFields: unknown }[];
    expect(nested.map((l) => [l.id, l.rule, l.matchedFields])).toEqual(rest.map((l) => [l.id, l.rule, l.matched_fields]));
    expect(res.body.data.masterProfileLinks.map((l: { id: string }) => l.id)).toEqual(rest.map((l) => l.id));
  });

  it("masterProfileLinks is not_found for another group's master profile", async () => {
    const res = await gql("query($id: UUID!) { masterProfileLinks(masterProfileId: $id) { id } }", { id: B().master_with_two_guests });
    expect(res.body.errors[0].extensions.code).toBe("not_found");
  });

  it("batches: 50 master profiles with their links cost the statements 5 do", async () => {
    const token = demo.groups.A.credentials.api_key;
    const statements = async (limit: number) => {
      const res = await gql(`query($limit: Int) { masterProfiles(limit: $limit) { nodes { id links { ${LINK_FIELDS} } } } }`, { limit }, token);
      expect(res.body.errors).toBeUndefined();
      const nodes = res.body.data.masterProfiles.nodes as { links: { linkedGuest: unknown }[] }[];
      expect(nodes).toHaveLength(limit);
      expect(nodes.every((n) => n.links.length === 2 && n.links[1].linkedGuest !== null)).toBe(true);
      return Number(res.headers["x-sql-statements"]);
    };
    const small = await statements(5);
    const large = await statements(50);
    expect(large).toBe(small);
    // The credential, the page, the links, the guest profiles of both sides, their source systems.
    expect(large).toBeLessThanOrEqual(6);
  });
});

describe("explain_merge (GraphQL mergeExplanation)", () => {
  it("joined: the chain of links from one profile to the other, in either order", async () => {
    const master = A().master_with_two_guests;
    const [first, second] = await pairOf(master);
    const forward = await mcp("explain_merge", { guest_profile_id: second, other_guest_profile_id: first });
    expect(forward.isError).toBe(false);
    expect(forward.body).toMatchObject({ joined: true, master_profile_id: master });
    expect(forward.body.chain).toHaveLength(1);
    expect(forward.body.chain[0]).toMatchObject({ guest_profile_id: second, linked_guest_profile_id: first, rule: "exact_email" });
    expect(forward.body.chain[0].matched_fields[0].field).toBe("email");
    expect(forward.body.reason).toContain("exact_email");
    const back = await mcp("explain_merge", { guest_profile_id: first, other_guest_profile_id: second });
    expect(back.body.joined).toBe(true);
    expect(back.body.chain.map((l: { id: string }) => l.id)).toEqual(forward.body.chain.map((l: { id: string }) => l.id));
  });

  it("a chain of several links: up from one profile to the one both paths share, then down", async () => {
    // A third profile of master 0, matched to its second profile by phone: 3 → 2 → 1.
    const master = A().master_with_two_guests;
    const [first, second] = await pairOf(master);
    const third = A().unclustered_guest;
    const linkId = "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d";
    const guests = await guestRows([second, third]);
    await t.adminPool.query("UPDATE guest_profiles SET master_profile_id = $1::uuid, phone = $2 WHERE id = $3::uuid", [master, guests.get(second)!.phone, third]);
    await t.adminPool.query(
      `INSERT INTO master_profile_links (id, property_group_id, master_profile_id, guest_profile_id, linked_guest_profile_id, property_id, rule, matched_fields, confidence, linked_at)
       VALUES ($1, $2, $3, $4, $5, $6, 'exact_phone', $7, 0.9, now())`,
      [linkId, A().id, master, third, second, guests.get(third)!.property_id, JSON.stringify([{ field: "phone", value: guests.get(second)!.phone!.replace(/\D/g, "") }])],
    );
    try {
      const res = await mcp("explain_merge", { guest_profile_id: third, other_guest_profile_id: first });
      expect(res.body.joined).toBe(true);
      expect(res.body.chain.map((l: { guest_profile_id: string; linked_guest_profile_id: string }) => [l.guest_profile_id, l.linked_guest_profile_id])).toEqual([
        [third, second],
        [second, first],
      ]);
      const reverse = await mcp("explain_merge", { guest_profile_id: first, other_guest_profile_id: third });
      expect(reverse.body.chain.map((l: { guest_profile_id: string }) => l.guest_profile_id)).toEqual([second, third]);
      // Moving the profile out of the master removes its link (the trigger keeps links true).
      await t.adminPool.query("UPDATE guest_profiles SET master_profile_id = NULL WHERE id = $1::uuid", [third]);
      const { rows } = await t.adminPool.query("SELECT 1 FROM master_profile_links WHERE guest_profile_id = $1::uuid", [third]);
      expect(rows).toHaveLength(0);
      const after = await mcp("explain_merge", { guest_profile_id: third, other_guest_profile_id: first });
      expect(after.body).toMatchObject({ joined: false, master_profile_id: null, chain: [] });
      expect(after.body.reason).toContain(`guest profile ${third} is in no master profile`);
    } finally {
      await t.adminPool.query("DELETE FROM master_profile_links WHERE id = $1::uuid", [linkId]);
      await t.adminPool.query("UPDATE guest_profiles SET master_profile_id = NULL, phone = $1 WHERE id = $2::uuid", [guests.get(third)!.phone, third]);
    }
  });

  it("not joined: a profile without a master profile, or two different master profiles, with the reason", async () => {
    const [first] = await pairOf(A().master_with_two_guests);
    const unclustered = await mcp("explain_merge", { guest_profile_id: first, other_guest_profile_id: A().unclustered_guest });
    expect(unclustered.body).toEqual({
      joined: false,
      master_profile_id: null,
      chain: [],
      reason: `Not joined: guest profile ${A().unclustered_guest} is in no master profile.`,
    });
    const { rows } = await t.adminPool.query<{ id: string; m: string }>(
      "SELECT id::text, master_profile_id::text AS m FROM guest_profiles WHERE property_group_id = $1::uuid AND master_profile_id IS NOT NULL AND master_profile_id <> $2::uuid LIMIT 1",
      [A().id, A().master_with_two_guests],
    );
    const other = await mcp("explain_merge", { guest_profile_id: first, other_guest_profile_id: rows[0].id });
    expect(other.body).toMatchObject({ joined: false, master_profile_id: null, chain: [] });
    expect(other.body.reason).toBe(
      `Not joined: guest profile ${first} is in master profile ${A().master_with_two_guests} and guest profile ${rows[0].id} in master profile ${rows[0].m}.`,
    );
  });

  it("the same profile twice is joined with an empty chain", async () => {
    const [first] = await pairOf(A().master_with_two_guests);
    const res = await mcp("explain_merge", { guest_profile_id: first, other_guest_profile_id: first });
    expect(res.body).toEqual({ joined: true, master_profile_id: A().master_with_two_guests, chain: [], reason: "Both ids name the same guest profile." });
  });

  it("unknown, foreign and malformed ids are errors naming the tool's arguments; GraphQL answers not_found", async () => {
    const [first] = await pairOf(A().master_with_two_guests);
    const unknown = "00000000-0000-4000-8000-000000000000";
    const missing = await mcp("explain_merge", { guest_profile_id: first, other_guest_profile_id: unknown });
    expect(missing.isError).toBe(true);
    expect(JSON.parse(missing.text)).toMatchObject({ error: "not_found" });
    expect(missing.text).toContain(unknown);
    const [foreignGuest] = await pairOf(B().master_with_two_guests);
    const foreign = await mcp("explain_merge", { guest_profile_id: foreignGuest, other_guest_profile_id: first });
    expect(JSON.parse(foreign.text).error).toBe("not_found");
    const malformed = await mcp("explain_merge", { guest_profile_id: "nope", other_guest_profile_id: first });
    expect(malformed.isError).toBe(true);
    expect(JSON.parse(malformed.text).error).toBe("invalid_request");
    expect(malformed.text).toContain("guest_profile_id");
    const absent = await mcp("explain_merge", { guest_profile_id: first });
    expect(absent.isError).toBe(true);
    expect(absent.text).toContain("other_guest_profile_id");
    const gqlMissing = await gql("query($a: UUID!, $b: UUID!) { mergeExplanation(guestProfileId: $a, otherGuestProfileId: $b) { joined } }", { a: first, b: unknown });
    expect(gqlMissing.body.errors[0].extensions.code).toBe("not_found");
  });

  it("a pinned credential cannot explain a profile at another property (not_found), and can at its own", async () => {
    const { token, property_id: pinned } = A().credentials.api_key_pinned;
    const [first, second] = await pairOf(A().master_with_two_guests);
    const guests = await guestRows([first, second]);
    const outside = [first, second].find((id) => guests.get(id)!.property_id !== pinned)!;
    const inside = [first, second].find((id) => guests.get(id)!.property_id === pinned)!;
    const res = await mcp("explain_merge", { guest_profile_id: inside, other_guest_profile_id: outside }, token);
    expect(JSON.parse(res.text).error).toBe("not_found");
    const self = await mcp("explain_merge", { guest_profile_id: inside, other_guest_profile_id: inside }, token);
    expect(self.body.joined).toBe(true);
    const foreign = await mcp("explain_merge", { guest_profile_id: inside, other_guest_profile_id: (await pairOf(B().master_with_two_guests))[0] }, token);
    expect(JSON.parse(foreign.text).error).toBe("not_found");
  });

  it("is listed within its budget of 600 characters", async () => {
    const res = await t.api
      .post("/mcp")
      .set(bearer(A().credentials.api_key))
      .set("Accept", "application/json, text/event-stream")
      .send({ jsonrpc: "2.0", id: 1, method: "tools/list" });
    const entry = (res.body.result.tools as { name: string }[]).find((x) => x.name === "explain_merge");
    expect(entry).toBeDefined();
    expect(JSON.stringify(entry).length).toBeLessThanOrEqual(600);
  });
});

describe("guest_context", () => {
  it("shows how each source profile joined the person", async () => {
    const master = A().master_with_two_guests;
    const [first, second] = await pairOf(master);
    const res = await mcp("guest_context", { master_profile_id: master });
    const profiles = res.body.identity.profiles as { guest_profile_id: string; link: unknown }[];
    const byId = new Map(profiles.map((p) => [p.guest_profile_id, p.link]));
    expect(byId.get(first)).toEqual({ linked_to: null, rule: "first_profile", matched_on: [], confidence: 1 });
    expect(byId.get(second)).toEqual({ linked_to: first, rule: "exact_email", matched_on: ["email"], confidence: 0.95 });
    const alone = await mcp("guest_context", { guest_profile_id: A().unclustered_guest });
    expect(alone.body.identity.profiles[0].link).toBeNull();
  });
});

describe("a property-narrowed caller never sees the id of a profile at another property (data/tables.ts)", () => {
  // Master M of the fixtures spans two properties. The scenario of the review: its first profile is
  // at another property (`outside`), and two profiles at the caller's property were matched to it
  // (`inside`, and `third`, moved into M for this test). Each inside link names `outside` as stored.
  const narrowed = () => [
    { name: "a key pinned to the property", token: A().credentials.api_key_pinned.token, headers: {} as Record<string, string> },
    { name: "X-Property-Id on the group's key", token: A().credentials.api_key, headers: { "X-Property-Id": A().credentials.api_key_pinned.property_id } },
  ];
  let inside: string, outside: string, third: string;
  let restore: () => Promise<void>;
  const thirdLink = "2b3c4d5e-6f70-4a81-9c2d-3e4f5a6b7c8d";

  beforeAll(async () => {
    const master = A().master_with_two_guests;
    const pinned = A().credentials.api_key_pinned.property_id;
    const { rows } = await t.adminPool.query<{ id: string; guest: string; linked: string | null; rule: string; fields: unknown; property: string }>(
      `SELECT l.id::text, l.guest_profile_id::text AS guest, l.linked_guest_profile_id::text AS linked, l.rule::text, l.matched_fields AS fields,
         g.property_id::text AS property FROM master_profile_links l JOIN guest_profiles g ON g.id = l.guest_profile_id
       WHERE l.master_profile_id = $1::uuid ORDER BY l.linked_at, l.id`,
      [master],
    );
    const [first, second] = rows;
    expect(first.property).not.toBe(second.property);
    inside = rows.find((r) => r.property === pinned)!.guest;
    outside = rows.find((r) => r.property !== pinned)!.guest;
    const email = (await guestRows([inside])).get(inside)!.email!;
    const [free] = (
      await t.adminPool.query<{ id: string; email: string | null }>(
        "SELECT id::text, email FROM guest_profiles WHERE property_group_id = $1::uuid AND property_id = $2::uuid AND master_profile_id IS NULL ORDER BY id LIMIT 1",
        [A().id, pinned],
      )
    ).rows;
    third = free.id;
    // The first profile is the one outside; the inside one was matched to it by e-mail.
    if (first.guest !== outside) {
      await t.adminPool.query("UPDATE master_profile_links SET rule = 'exact_email', linked_guest_profile_id = $1::uuid, matched_fields = $2 WHERE id = $3::uuid", [
        outside,
        JSON.stringify([{ field: "email", value: email.trim().toLowerCase() }]),
        first.id,
      ]);
      await t.adminPool.query("UPDATE master_profile_links SET rule = 'first_profile', linked_guest_profile_id = NULL, matched_fields = '[]' WHERE id = $1::uuid", [second.id]);
    }
    await t.adminPool.query("UPDATE guest_profiles SET master_profile_id = $1::uuid, email = $2 WHERE id = $3::uuid", [master, email, third]);
    await t.adminPool.query(
      `INSERT INTO master_profile_links (id, property_group_id, master_profile_id, guest_profile_id, linked_guest_profile_id, property_id, rule, matched_fields, confidence, linked_at)
       VALUES ($1, $2, $3, $4, $5, $6, 'exact_email', $7, 0.95, now())`,
      [thirdLink, A().id, master, third, outside, pinned, JSON.stringify([{ field: "email", value: email.trim().toLowerCase() }])],
    );
    restore = async () => {
      await t.adminPool.query("DELETE FROM master_profile_links WHERE id = $1::uuid", [thirdLink]);
      await t.adminPool.query("UPDATE guest_profiles SET master_profile_id = NULL, email = $1 WHERE id = $2::uuid", [free.email, third]);
      for (const r of [first, second]) {
        await t.adminPool.query("UPDATE master_profile_links SET rule = 'first_profile', linked_guest_profile_id = NULL, matched_fields = '[]' WHERE id = $1::uuid", [r.id]);
      }
      for (const r of [first, second]) {
        await t.adminPool.query("UPDATE master_profile_links SET rule = $1::\"MasterProfileLinkRule\", linked_guest_profile_id = $2::uuid, matched_fields = $3 WHERE id = $4::uuid", [
          r.rule,
          r.linked,
          JSON.stringify(r.fields),
          r.id,
        ]);
      }
    };
  });
  afterAll(() => restore());

  it("the group's key sees the whole chain (the scenario holds)", async () => {
    const res = await links(A().master_with_two_guests);
    const byGuest = new Map((res.body.data as { guest_profile_id: string; linked_guest_profile_id: string | null }[]).map((l) => [l.guest_profile_id, l.linked_guest_profile_id]));
    expect(byGuest.get(inside)).toBe(outside);
    expect(byGuest.get(third)).toBe(outside);
    expect(byGuest.get(outside)).toBeNull();
  });

  it.each([0, 1])("REST links and GraphQL MasterProfile.links, masterProfileLinks: the inside links with linked_guest_profile_id null (caller %i)", async (i) => {
    const { token, headers } = narrowed()[i];
    const rest = await links(A().master_with_two_guests, token).set(headers);
    expect(rest.status).toBe(200);
    expect((rest.body.data as { guest_profile_id: string }[]).map((l) => l.guest_profile_id).sort()).toEqual([inside, third].sort());
    for (const l of rest.body.data) expect(l).toMatchObject({ linked_guest_profile_id: null, linked_guest: null, rule: "exact_email" });
    expect(JSON.stringify(rest.body)).not.toContain(outside);
    const graphql = await gql(`query($id: UUID!) { masterProfile(id: $id) { links { ${LINK_FIELDS} } } masterProfileLinks(masterProfileId: $id) { ${LINK_FIELDS} } }`, {
      id: A().master_with_two_guests,
    }, token).set(headers);
    expect(graphql.body.errors).toBeUndefined();
    expect(graphql.body.data.masterProfile.links).toHaveLength(2);
    for (const l of [...graphql.body.data.masterProfile.links, ...graphql.body.data.masterProfileLinks]) expect(l).toMatchObject({ linkedGuestProfileId: null, linkedGuest: null });
    expect(JSON.stringify(graphql.body)).not.toContain(outside);
  });

  it.each([0, 1])("guest_context: each profile's link.linked_to is null, not the outside id (caller %i)", async (i) => {
    const { token, headers } = narrowed()[i];
    const res = await mcp("guest_context", { master_profile_id: A().master_with_two_guests }, token, headers);
    expect(res.isError).toBe(false);
    const profiles = res.body.identity.profiles as { guest_profile_id: string; link: { linked_to: string | null; rule: string } }[];
    expect(profiles.map((p) => p.guest_profile_id).sort()).toEqual([inside, third].sort());
    for (const p of profiles) expect(p.link).toMatchObject({ linked_to: null, rule: "exact_email" });
    expect(res.text).not.toContain(outside);
  });

  it.each([0, 1])("explain_merge: a chain through the outside profile is no chain in scope, and names neither it nor its matched values (caller %i)", async (i) => {
    const { token, headers } = narrowed()[i];
    const res = await mcp("explain_merge", { guest_profile_id: inside, other_guest_profile_id: third }, token, headers);
    expect(res.isError).toBe(false);
    expect(res.body).toMatchObject({ joined: true, master_profile_id: A().master_with_two_guests, chain: [] });
    expect(res.body.reason).toContain("no chain of links in scope");
    expect(res.text).not.toContain(outside);
    expect(res.text).not.toContain("@");
    // The group's key sees the chain through it.
    const whole = await mcp("explain_merge", { guest_profile_id: inside, other_guest_profile_id: third });
    expect(whole.body.chain.map((l: { linked_guest_profile_id: string }) => l.linked_guest_profile_id)).toEqual([outside, outside]);
  });
});

describe("a link's property follows its guest profile's (trigger master_profile_links_follow_guest)", () => {
  it("a guest profile moved to another property: its link moves with it, so the old property's pinned key no longer sees it and the new one's does", async () => {
    const master = A().master_with_two_guests;
    const { token, property_id: pinned } = A().credentials.api_key_pinned;
    const { rows } = await t.adminPool.query<{ id: string; property_id: string }>(
      "SELECT id::text, property_id::text FROM guest_profiles WHERE master_profile_id = $1::uuid",
      [master],
    );
    const moved = rows.find((g) => g.property_id === pinned)!;
    const elsewhere = rows.find((g) => g.property_id !== pinned)!.property_id;
    const linkProperty = async () =>
      (await t.adminPool.query<{ p: string }>("SELECT property_id::text AS p FROM master_profile_links WHERE guest_profile_id = $1::uuid", [moved.id])).rows.map((r) => r.p);
    expect(await linkProperty()).toEqual([pinned]);
    await t.adminPool.query("UPDATE guest_profiles SET property_id = $1::uuid WHERE id = $2::uuid", [elsewhere, moved.id]);
    try {
      // The link stays (the profile is still in its master), at the guest profile's new property.
      expect(await linkProperty()).toEqual([elsewhere]);
      // The old property's key: the master has no profile there any more.
      expect((await links(master, token)).status).toBe(404);
      // The new property's view (X-Property-Id on the group's key) sees both links.
      const there = await links(master).set("X-Property-Id", elsewhere);
      expect(there.status).toBe(200);
      expect((there.body.data as { guest_profile_id: string }[]).map((l) => l.guest_profile_id)).toContain(moved.id);
      // An update that leaves property_id alone leaves the link alone.
      await t.adminPool.query("UPDATE guest_profiles SET given_name = given_name WHERE id = $1::uuid", [moved.id]);
      expect(await linkProperty()).toEqual([elsewhere]);
    } finally {
      await t.adminPool.query("UPDATE guest_profiles SET property_id = $1::uuid WHERE id = $2::uuid", [pinned, moved.id]);
    }
    expect(await linkProperty()).toEqual([pinned]);
    expect((await links(master, token)).status).toBe(200);
  });
});

describe("a master profile made before links were recorded (docs/identity-resolution.md)", () => {
  it("has no links on every door, explain_merge says joined with no chain, and the docs and the route's prose say so (and that the list is unpaged)", async () => {
    const master = "1f2e3d4c-5b6a-4978-8695-a4b3c2d1e0f9";
    const { rows } = await t.adminPool.query<{ id: string }>(
      "SELECT id::text FROM guest_profiles WHERE property_group_id = $1::uuid AND master_profile_id IS NULL ORDER BY id LIMIT 2",
      [A().id],
    );
    const [g1, g2] = rows.map((r) => r.id);
    await t.adminPool.query("INSERT INTO master_profiles (id, property_group_id, given_name) VALUES ($1, $2, 'Before links')", [master, A().id]);
    await t.adminPool.query("UPDATE guest_profiles SET master_profile_id = $1::uuid WHERE id = ANY($2::uuid[])", [master, [g1, g2]]);
    try {
      expect((await links(master)).body).toEqual({ data: [] });
      const graphql = await gql("query($id: UUID!) { masterProfile(id: $id) { guestProfileIds links { id } } }", { id: master });
      expect(graphql.body.data.masterProfile.guestProfileIds.sort()).toEqual([g1, g2].sort());
      expect(graphql.body.data.masterProfile.links).toEqual([]);
      const context = await mcp("guest_context", { master_profile_id: master });
      expect(context.body.identity.profiles.map((p: { link: unknown }) => p.link)).toEqual([null, null]);
      const explained = await mcp("explain_merge", { guest_profile_id: g1, other_guest_profile_id: g2 });
      expect(explained.body).toMatchObject({ joined: true, master_profile_id: master, chain: [] });
      expect(explained.body.reason).toContain("no chain of links in scope connects them");
    } finally {
      await t.adminPool.query("UPDATE guest_profiles SET master_profile_id = NULL WHERE id = ANY($1::uuid[])", [[g1, g2]]);
      await t.adminPool.query("DELETE FROM master_profiles WHERE id = $1", [master]);
    }
    const doc = readFileSync(join(__dirname, "../../../docs/identity-resolution.md"), "utf8");
    expect(doc).toContain("## Master profiles made before links");
    expect(doc).toMatch(/list is not paged/);
    const prose = ROUTES["GET /v1/master-profiles/{id}/links"].description;
    expect(prose).toContain("Unpaged");
    expect(prose).toContain("clustered before links were recorded");
    // The schema names the links' real migration.
    expect(readFileSync(join(__dirname, "../../../prisma/schema.prisma"), "utf8")).not.toContain("20261128180000_master_profile_links");
  });
});

describe("the evidence is true of the data", () => {
  interface Evidence {
    group: string;
    rule: string;
    master: string;
    fields: { field: string; value: string | null }[];
    confidence: string;
    linked_by: string;
    guest: GuestSide;
    linked: GuestSide | null;
  }

  /** Each field as the rule compares it: e-mail trimmed and lower-case, phone digits, names folded to lower case. */
  const normalised = (g: GuestSide, field: string): string | null => {
    switch (field) {
      case "email":
        return g.email && normaliseContact("email", g.email);
      case "phone":
        return g.phone && g.phone.replace(/\D/g, "");
      case "given_name":
        return g.given_name?.trim().toLowerCase() ?? null;
      case "family_name":
        return g.family_name?.trim().toLowerCase() ?? null;
      case "birth_date":
        return g.birth_date;
      default:
        throw new Error(`a link names the field ${field}, which this test cannot check`);
    }
  };
  const RULE_FIELDS: Record<string, string[]> = {
    exact_email: ["email"],
    exact_phone: ["phone"],
    name_birth_date: ["given_name", "family_name", "birth_date"],
  };

  it("every link of the test fixtures and of the demo data: matched fields equal in both profiles, one link per clustered profile", async () => {
    const groups = [A().id, B().id, demo.groups.A.id, demo.groups.B.id];
    const side = (alias: string) =>
      `json_build_object('id', ${alias}.id, 'master_profile_id', ${alias}.master_profile_id, 'property_id', ${alias}.property_id,
        'integration_id', ${alias}.integration_id, 'given_name', ${alias}.given_name, 'family_name', ${alias}.family_name,
        'email', ${alias}.email, 'phone', ${alias}.phone, 'birth_date', to_char(${alias}.birth_date, 'YYYY-MM-DD'))`;
    const { rows } = await t.adminPool.query<Evidence>(
      `SELECT l.property_group_id::text AS group, l.rule::text AS rule, l.master_profile_id::text AS master, l.matched_fields AS fields,
         l.confidence::text AS confidence, l.linked_by, ${side("g")} AS guest, CASE WHEN o.id IS NULL THEN NULL ELSE ${side("o")} END AS linked
       FROM master_profile_links l JOIN guest_profiles g ON g.id = l.guest_profile_id LEFT JOIN guest_profiles o ON o.id = l.linked_guest_profile_id
       WHERE l.property_group_id = ANY($1::uuid[])`,
      [groups],
    );
    const rules = new Set(rows.map((r) => r.rule));
    for (const rule of ["first_profile", "exact_email", "exact_phone", "name_birth_date", "manual"]) expect(rules).toContain(rule);
    for (const link of rows) {
      expect(link.guest.master_profile_id).toBe(link.master);
      expect(Number(link.confidence)).toBeGreaterThan(0);
      expect(Number(link.confidence)).toBeLessThanOrEqual(1);
      if (link.rule === "first_profile") {
        expect(link.linked).toBeNull();
        expect(link.fields).toEqual([]);
        continue;
      }
      expect(link.linked).not.toBeNull();
      expect(link.linked!.master_profile_id).toBe(link.master);
      if (link.rule === "manual") {
        expect(link.linked_by).not.toBe("identity_resolution");
        continue;
      }
      expect(link.linked_by).toBe("identity_resolution");
      expect(link.fields.map((f) => f.field)).toEqual(RULE_FIELDS[link.rule]);
      for (const { field, value } of link.fields) {
        expect(value).not.toBeNull();
        expect([field, normalised(link.guest, field)]).toEqual([field, value]);
        expect([field, normalised(link.linked!, field)]).toEqual([field, value]);
      }
    }
    // Every profile of a master profile has its link, and each master one first profile.
    const { rows: counts } = await t.adminPool.query<{ unlinked: string; firsts: string; masters: string }>(
      `SELECT (SELECT count(*) FROM guest_profiles g WHERE g.property_group_id = ANY($1::uuid[]) AND g.master_profile_id IS NOT NULL
                 AND NOT EXISTS (SELECT 1 FROM master_profile_links l WHERE l.guest_profile_id = g.id AND l.master_profile_id = g.master_profile_id)) AS unlinked,
              (SELECT count(*) FROM master_profile_links WHERE property_group_id = ANY($1::uuid[]) AND rule = 'first_profile') AS firsts,
              (SELECT count(*) FROM master_profiles WHERE property_group_id = ANY($1::uuid[])) AS masters`,
      [groups],
    );
    expect(counts[0].unlinked).toBe("0");
    expect(counts[0].firsts).toBe(counts[0].masters);
    expect(demo.groups.A.counts.master_profile_links).toBe(100);
  });
});
