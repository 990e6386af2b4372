// /graphql: the same credentials, scoping and error codes as /v1.
import { startTestApp, type TestApp } from "../helpers/app";

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const A = () => t.manifest.groups.A;
const gql = (query: string, token?: string, variables?: Record<string, unknown>) => {
  const req = t.api.post("/graphql").set("Content-Type", "application/json");
  if (token) req.set("Authorization", `Bearer ${token}`);
  return req.send({ query, variables });
};

describe("/graphql", () => {
  it("serves guests with their relations through the same scope", async () => {
    const res = await gql(
      `query { viewer { kind propertyGroupId } guests(limit: 5) { nodes { id propertyId property { id } masterProfile { id guests { id } } } nextCursor hasMore } }`,
      A().credentials.api_key,
    );
    expect(res.status).toBe(200);
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.viewer).toEqual({ kind: "api_key", propertyGroupId: A().id });
    const nodes = res.body.data.guests.nodes;
    expect(nodes).toHaveLength(5);
    for (const g of nodes) {
      expect(g.property.id).toBe(g.propertyId);
      if (g.masterProfile) expect(g.masterProfile.guests.map((x: { id: string }) => x.id)).toContain(g.id);
    }
  });

  it("batches every relation: the SQL statement count does not grow with the page size", async () => {
    const query = `query($limit: Int) { guests(limit: $limit) { nodes { id
      property { id } integration { id } masterProfile { id guests { id } loyaltyMemberships { id } }
      reservations { id transactions { id } } transactions { id } consents { id } reviews { id } actions { id } loyaltyMemberships { id }
    } } }`;
    const statements = async (limit: number) => {
      const res = await gql(query, A().credentials.api_key, { limit });
      expect(res.body.errors).toBeUndefined();
      expect(res.body.data.guests.nodes).toHaveLength(limit);
      return Number(res.headers["x-sql-statements"]);
    };
    // Pages big enough that every relation has rows to load in both.
    const small = await statements(15);
    const large = await statements(40);
    expect(large).toBe(small);
    // One for the credential, one for the page, at most one per relation (12 relations here).
    expect(large).toBeLessThanOrEqual(14);
  });

  it("a selection that reads a few columns, through fragments and aliases, gets the same values as one that reads all", async () => {
    const reservationFields = `id propertyId integrationId sourceId guestProfileId confirmationNumber kind status arrivalDate departureDate nights
      startsAt adults children roomType roomNumber rateCode spaceId bookingChannel totalAmountMinor currency specialRequests bookedAt cancelledAt createdAt updatedAt`;
    const transactionFields = "id propertyId integrationId sourceId guestProfileId reservationId kind category description amountMinor currency outlet occurredAt createdAt";
    const everything = await gql(
      `{ guests(limit: 30) { nodes { id givenName email reservations { ${reservationFields} guest { id } } transactions { ${transactionFields} } } } }`,
      A().credentials.api_key,
    );
    const few = await gql(
      `query { guests(limit: 30) { nodes { ...G } } }
       fragment G on Guest { id mail: email reservations { ...R ... on Reservation { departureDate } } transactions { amount: amountMinor occurredAt } }
       fragment R on Reservation { nights arrivalDate guest { id } }`,
      A().credentials.api_key,
    );
    expect(everything.body.errors).toBeUndefined();
    expect(few.body.errors).toBeUndefined();
    const full = everything.body.data.guests.nodes;
    expect(full.some((g: { reservations: unknown[] }) => g.reservations.length > 0)).toBe(true);
    expect(few.body.data.guests.nodes).toEqual(
      full.map((g: { id: string; email: string; reservations: Record<string, unknown>[]; transactions: Record<string, unknown>[] }) => ({
        id: g.id,
        mail: g.email,
        reservations: g.reservations.map((r) => ({ nights: r.nights, arrivalDate: r.arrivalDate, guest: r.guest, departureDate: r.departureDate })),
        transactions: g.transactions.map((x) => ({ amount: x.amountMinor, occurredAt: x.occurredAt })),
      })),
    );
  });

  it("401 without a credential, 403 for partner tokens (REST only)", async () => {
    const none = await gql("{ viewer { kind } }");
    expect(none.status).toBe(401);
    expect(none.body.errors[0].extensions.code).toBe("unauthorized");
    const partner = await gql("{ viewer { kind } }", A().credentials.partner_token);
    expect(partner.status).toBe(403);
    expect(partner.body.errors[0].extensions.code).toBe("forbidden");
  });

  it("reports a missing scope on the field with code forbidden and the scope", async () => {
    const res = await gql("{ integrations { id } }", A().credentials.api_key_limited);
    expect(res.body.data).toBeNull();
    expect(res.body.errors[0].extensions).toMatchObject({ code: "forbidden", scope: "read:properties" });
  });

  it("keeps groups apart: another group's guest is not_found", async () => {
    const res = await gql("query($id: UUID!) { guest(id: $id) { id } }", t.manifest.groups.B.credentials.api_key, { id: A().guest_lookup.guest_id });
    expect(res.body.errors[0].extensions.code).toBe("not_found");
  });

  it("rejects bad input with a clear code", async () => {
    const res = await gql("query($id: UUID!) { guest(id: $id) { id } }", A().credentials.api_key, { id: "nope" });
    expect(res.status).toBe(400);
    expect(res.body.errors[0].message).toMatch(/uuid/);
  });
});
