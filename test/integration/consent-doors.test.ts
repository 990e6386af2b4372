// One answer per question on every door (issue 26): a contact point in any formatting gets the same
// consent decision on /v1, /graphql and /mcp, because data/consents.ts normalises every contact value
// it is asked about (contactValueOf) whichever door asked.
import { startTestApp, type TestApp } from "../helpers/app";

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const A = () => t.manifest.groups.A;
const auth = () => ({ Authorization: `Bearer ${A().credentials.api_key}` });

interface Decision {
  contactValue: string;
  status: string;
  observationCount: number;
}

async function viaRest(contact: string, purpose: string): Promise<Decision[]> {
  const res = await t.api.get(`/v1/consents/effective?contact_value=${encodeURIComponent(contact)}&purpose=${purpose}`).set(auth());
  expect(res.status).toBe(200);
  return res.body.data.map((r: { contact_value: string; status: string; observation_count: number }) => ({
    contactValue: r.contact_value, status: r.status, observationCount: r.observation_count,
  }));
}

async function viaGraphql(contact: string, purpose: string): Promise<Decision[]> {
  const res = await t.api.post("/graphql").set(auth()).send({
    query: "query($c: String, $p: String) { effectiveConsents(filter: { contactValue: $c, purpose: $p }) { nodes { contactValue status observationCount } } }",
    variables: { c: contact, p: purpose },
  });
  expect(res.body.errors).toBeUndefined();
  return res.body.data.effectiveConsents.nodes;
}

async function mcp(name: string, args: Record<string, unknown>) {
  const res = await t.api
    .post("/mcp")
    .set(auth())
    .set("Accept", "application/json, text/event-stream")
    .send({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } });
  expect(res.status).toBe(200);
  expect(res.body.result.isError).toBeFalsy();
  return JSON.parse(res.body.result.content[0].text);
}

async function viaMcp(contact: string, purpose: string): Promise<Decision[]> {
  const body = await mcp("effective_consent", { contact_value: contact, purpose });
  return body.data.map((r: { contact_value: string; status: string; observation_count: number }) => ({
    contactValue: r.contact_value, status: r.status, observationCount: r.observation_count,
  }));
}

/** contactPermission on /graphql and check_contact_permission on /mcp, as a Decision. */
async function permission(type: "email" | "phone", contact: string, purpose: string): Promise<Decision[]> {
  const res = await t.api.post("/graphql").set(auth()).send({
    query: `query($c: String, $p: String!) { contactPermission(${type}: $c, purpose: $p) { contactValue status observationCount } }`,
    variables: { c: contact, p: purpose },
  });
  expect(res.body.errors).toBeUndefined();
  const viaTool = await mcp("check_contact_permission", { [type]: contact, purpose });
  expect({ contactValue: viaTool.contact_value, status: viaTool.status, observationCount: viaTool.observation_count }).toEqual(res.body.data.contactPermission);
  return [res.body.data.contactPermission];
}

/** A phone contact of group A with observations: the fixtures record SMS consent against E.164 numbers. */
async function observedPhone(): Promise<{ e164: string; purpose: string }> {
  const o = await t.admin.consentObservation.findFirstOrThrow({ where: { propertyGroupId: A().id, contactType: "phone" }, orderBy: { id: "asc" } });
  expect(o.contactValue).toMatch(/^\+\d{8,15}$/);
  return { e164: o.contactValue, purpose: o.purpose };
}

describe("the same contact in any formatting gets the same consent decision on every door", () => {
  it("a phone number typed with spaces, dashes or 00 is looked up as E.164 on /v1, /graphql and /mcp", async () => {
    const { e164, purpose } = await observedPhone();
    const [cc, rest] = [e164.slice(1, 3), e164.slice(3)];
    const formattings = [
      e164,
      `+${cc} ${rest.slice(0, 2)} ${rest.slice(2, 6)} ${rest.slice(6)}`, // "+44 20 7946 0958"
      `+${cc}-${rest.slice(0, 2)}-${rest.slice(2, 6)}-${rest.slice(6)}`, // "+44-20-7946-0958"
      ` 00${cc} ${rest} `,
    ];
    const [expected] = await viaRest(e164, purpose);
    expect(expected).toMatchObject({ contactValue: e164 });
    expect(expected.observationCount).toBeGreaterThan(0);
    for (const phone of formattings) {
      expect([phone, await viaRest(phone, purpose)]).toEqual([phone, [expected]]);
      expect([phone, await viaGraphql(phone, purpose)]).toEqual([phone, [expected]]);
      expect([phone, await viaMcp(phone, purpose)]).toEqual([phone, [expected]]);
      expect([phone, await permission("phone", phone, purpose)]).toEqual([phone, [expected]]);
    }
  });

  it("an e-mail in upper case with surrounding spaces is the same contact on /v1, /graphql and /mcp", async () => {
    const { contact_value, purpose } = A().consent_conflict;
    const [expected] = await viaRest(contact_value, purpose);
    expect(expected).toMatchObject({ contactValue: contact_value, status: "withdrawn" });
    for (const email of [contact_value.toUpperCase(), `  ${contact_value.toUpperCase()}\t`, ` ${contact_value} `]) {
      expect([email, await viaRest(email, purpose)]).toEqual([email, [expected]]);
      expect([email, await viaGraphql(email, purpose)]).toEqual([email, [expected]]);
      expect([email, await viaMcp(email, purpose)]).toEqual([email, [expected]]);
      expect([email, await permission("email", email, purpose)]).toEqual([email, [expected]]);
    }
  });

  it("the stored observations are found by a formatted phone number too (/v1/consents?contact_value=)", async () => {
    const { e164, purpose } = await observedPhone();
    const spaced = `+${e164.slice(1, 3)} ${e164.slice(3, 7)} ${e164.slice(7)}`;
    const res = await t.api.get(`/v1/consents?contact_value=${encodeURIComponent(spaced)}&purpose=${purpose}`).set(auth());
    expect(res.status).toBe(200);
    const stored = await t.admin.consentObservation.count({ where: { propertyGroupId: A().id, contactValue: e164, purpose } });
    expect(res.body.data.length).toBe(stored);
    for (const o of res.body.data) expect(o.contact_value).toBe(e164);
  });
});
