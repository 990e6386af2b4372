// The provider clients against the stand-in: request shapes, batching limits, per-member errors and
// failure classification.
import { createHash } from "node:crypto";
import { DestinationError, klaviyoClient, mailchimpBaseUrlForKey, mailchimpClient } from "../../src/delivery/providers";
import { startStandIn, type StandIn } from "../../src/delivery/standin";

const KEY = "feedfacefeedfacefeedfacefeedface-us7";
let standIn: StandIn;
beforeAll(async () => {
  standIn = await startStandIn({ apiKeys: [KEY] });
});
afterAll(() => standIn.close());
beforeEach(() => standIn.reset());

const members = (n: number) => Array.from({ length: n }, (_, i) => ({ email: `m${i}@example.org`, givenName: "M", familyName: `${i}` }));
const mailchimp = (apiKey = KEY) => mailchimpClient({ baseUrl: standIn.url, apiKey });
const klaviyo = (apiKey = KEY) => klaviyoClient({ baseUrl: standIn.url, apiKey });
const failure = async (p: Promise<unknown>) => {
  const err = await p.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(DestinationError);
  return err as DestinationError;
};

describe("mailchimp client", () => {
  it("subscribes in batches of at most 500 and reads per-member errors", async () => {
    standIn.rejectEmails(["m3@example.org"]);
    const r = await mailchimp().upsertSubscribers("list1", members(501));
    expect(standIn.requestCount()).toBe(2);
    expect(r.accepted).toBe(500);
    expect(r.failed).toEqual([{ email: "m3@example.org", reason: "ERROR_GENERIC" }]);
    expect(standIn.received().filter((o) => o.op === "subscribe")).toHaveLength(500);
  });

  it("removes by member hash; a member not on the list counts as removed", async () => {
    await mailchimp().upsertSubscribers("list1", members(1));
    const r = await mailchimp().remove("list1", ["m0@example.org", "never@example.org"]);
    expect(r).toEqual({ accepted: 2, failed: [] });
    const removed = standIn.received().filter((o) => o.op === "remove").map((o) => o.email);
    expect(removed).toContain("m0@example.org");
  });

  it("classifies failures: 401/404 permanent, 429/5xx and network transient; no key in messages", async () => {
    const bad = await failure(mailchimp("wrong-key-us7").upsertSubscribers("l", members(1)));
    expect(bad).toMatchObject({ kind: "permanent", status: 401 });
    expect(bad.message).not.toContain("wrong-key");
    standIn.failNext(1, 404);
    expect(await failure(mailchimp().upsertSubscribers("l", members(1)))).toMatchObject({ kind: "permanent", status: 404 });
    standIn.failNext(1, 429, { retryAfter: 30 });
    expect(await failure(mailchimp().upsertSubscribers("l", members(1)))).toMatchObject({ kind: "transient", retryAfterMs: 30_000 });
    standIn.failNext(1, 502);
    expect(await failure(mailchimp().remove("l", ["a@example.org"]))).toMatchObject({ kind: "transient", status: 502 });
    const offline = mailchimpClient({ baseUrl: "http://127.0.0.1:9", apiKey: KEY, timeoutMs: 2_000 });
    expect(await failure(offline.upsertSubscribers("l", members(1)))).toMatchObject({ kind: "transient" });
  });

  it("derives the production base URL from the key's data centre", () => {
    expect(mailchimpBaseUrlForKey(KEY)).toBe("https://us7.api.mailchimp.com");
    expect(mailchimpBaseUrlForKey("no-dc")).toBeUndefined();
  });
});

describe("klaviyo client", () => {
  it("creates subscribe and unsubscribe jobs for the list", async () => {
    expect(await klaviyo().upsertSubscribers("LIST01", members(3))).toEqual({ accepted: 3, failed: [] });
    expect(await klaviyo().remove("LIST01", ["m1@example.org"])).toEqual({ accepted: 1, failed: [] });
    expect(standIn.received()).toEqual([
      ...members(3).map((m) => ({ provider: "klaviyo", listId: "LIST01", op: "subscribe", email: m.email })),
      { provider: "klaviyo", listId: "LIST01", op: "remove", email: "m1@example.org" },
    ]);
  });

  it("splits unsubscribe jobs at 100 profiles", async () => {
    await klaviyo().remove("LIST01", members(250).map((m) => m.email));
    expect(standIn.requestCount()).toBe(3);
    expect(standIn.received()).toHaveLength(250);
  });

  it("classifies failures", async () => {
    expect(await failure(klaviyo("nope").upsertSubscribers("L", members(1)))).toMatchObject({ kind: "permanent", status: 401 });
    standIn.failNext(1, 403);
    expect(await failure(klaviyo().remove("L", ["a@example.org"]))).toMatchObject({ kind: "permanent", status: 403 });
    standIn.failNext(1, 500);
    expect(await failure(klaviyo().upsertSubscribers("L", members(1)))).toMatchObject({ kind: "transient", status: 500 });
  });
});

describe("request shapes", () => {
  interface Captured { url: string; method: string; headers: Record<string, string>; body: unknown }
  const capture = (status: number, answer: unknown = {}) => {
    const calls: Captured[] = [];
    const fake: typeof fetch = async (url, init) => {
      calls.push({
        url: String(url),
        method: init?.method ?? "GET",
        headers: init?.headers as Record<string, string>,
        body: init?.body ? JSON.parse(String(init.body)) : undefined,
      });
      return new Response(status === 204 || status === 202 ? null : JSON.stringify(answer), { status });
    };
    return { calls, fake };
  };

  it("mailchimp: batch upsert body, Basic auth, DELETE by md5 of the lower-cased address", async () => {
    const { calls, fake } = capture(200, { errors: [] });
    const client = mailchimpClient({ baseUrl: "https://us7.api.mailchimp.com/", apiKey: KEY, fetch: fake });
    await client.upsertSubscribers("abc123", [{ email: "Ann@Example.org", givenName: "Ann", familyName: null }]);
    expect(calls[0]).toMatchObject({
      url: "https://us7.api.mailchimp.com/3.0/lists/abc123",
      method: "POST",
      body: {
        members: [{ email_address: "Ann@Example.org", status: "subscribed", status_if_new: "subscribed", merge_fields: { FNAME: "Ann" } }],
        update_existing: true,
      },
    });
    expect(calls[0].headers.authorization).toBe(`Basic ${Buffer.from(`anystring:${KEY}`).toString("base64")}`);
    const del = capture(204);
    await mailchimpClient({ baseUrl: "https://us7.api.mailchimp.com", apiKey: KEY, fetch: del.fake }).remove("abc123", ["Ann@Example.org"]);
    const hash = createHash("md5").update("ann@example.org").digest("hex");
    expect(del.calls[0]).toMatchObject({ method: "DELETE", url: `https://us7.api.mailchimp.com/3.0/lists/abc123/members/${hash}` });
  });

  it("klaviyo: JSON:API job bodies with the list relationship, key and revision headers", async () => {
    const { calls, fake } = capture(202);
    const client = klaviyoClient({ baseUrl: "https://a.klaviyo.com", apiKey: "pk_abc", fetch: fake });
    await client.upsertSubscribers("Y6nRLr", [{ email: "ann@example.org" }]);
    await client.remove("Y6nRLr", ["ann@example.org"]);
    expect(calls.map((c) => c.url)).toEqual([
      "https://a.klaviyo.com/api/profile-subscription-bulk-create-jobs",
      "https://a.klaviyo.com/api/profile-subscription-bulk-delete-jobs",
    ]);
    expect(calls[0].headers).toMatchObject({ authorization: "Klaviyo-API-Key pk_abc", revision: "2024-10-15" });
    expect(calls[0].body).toEqual({
      data: {
        type: "profile-subscription-bulk-create-job",
        attributes: {
          profiles: { data: [{ type: "profile", attributes: { email: "ann@example.org", subscriptions: { email: { marketing: { consent: "SUBSCRIBED" } } } } }] },
        },
        relationships: { list: { data: { type: "list", id: "Y6nRLr" } } },
      },
    });
    expect(calls[1].body).toMatchObject({
      data: { type: "profile-subscription-bulk-delete-job", relationships: { list: { data: { type: "list", id: "Y6nRLr" } } } },
    });
  });
});
