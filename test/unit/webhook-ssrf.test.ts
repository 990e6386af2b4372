// The webhook sender's pure rules: which addresses and URLs are refused, the retry schedule, and an
// NDJSON line of `gcs events append`. No socket, no DNS: the resolver is injected.
import { checkUrlForm, refusalOf, resolveChecked, WebhookUrlError, type Resolver } from "../../src/webhooks/ssrf";
import { jitteredBackoffMs } from "../../src/delivery/backoff";
import { backoffMs } from "../../src/delivery/engine";
import { RETRY_CURVE, GIVE_UP_AFTER_MS } from "../../src/webhooks/sender";
import { parseEventLine } from "../../src/cli/commands/events";

const strict = { allowPrivate: false, httpsOnly: false };
const demo = { allowPrivate: true, httpsOnly: false };

describe("refusalOf", () => {
  it.each([
    "127.0.0.1", "127.8.9.10", "::1", "10.0.0.1", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254", "169.254.1.1",
    "100.64.0.1", "0.0.0.0", "224.0.0.1", "255.255.255.255", "fc00::1", "fd12:3456::1", "fe80::1", "::ffff:10.0.0.1", "::ffff:127.0.0.1", "::",
    "64:ff9b::a00:1", "192.0.2.1", "198.18.0.1",
  ])("refuses %s", (address) => {
    expect(refusalOf(address, strict)).toBeDefined();
  });

  it.each(["93.184.216.34", "8.8.8.8", "172.32.0.1", "2606:4700::1111", "100.128.0.1"])("accepts the public address %s", (address) => {
    expect(refusalOf(address, strict)).toBeUndefined();
  });

  it("the demo switch allows loopback and private addresses, never metadata or this-network", () => {
    expect(refusalOf("127.0.0.1", demo)).toBeUndefined();
    expect(refusalOf("10.1.1.1", demo)).toBeUndefined();
    expect(refusalOf("169.254.169.254", demo)).toBeDefined();
    expect(refusalOf("::ffff:169.254.169.254", demo)).toBeDefined();
    expect(refusalOf("0.0.0.0", demo)).toBeDefined();
  });
});

describe("URLs", () => {
  it("checks the form and IP literals", () => {
    expect(() => checkUrlForm("https://hooks.example.com/x", { ...strict, httpsOnly: true })).not.toThrow();
    expect(() => checkUrlForm("http://hooks.example.com/x", { ...strict, httpsOnly: true })).toThrow(WebhookUrlError);
    expect(() => checkUrlForm("http://[fe80::1]/x", strict)).toThrow(/link-local|private/);
    expect(() => checkUrlForm("http://localhost/x", strict)).toThrow(/local host/);
    expect(() => checkUrlForm("http://metadata.google.internal/x", strict)).toThrow(/local host/);
    expect(() => checkUrlForm("file:///etc/passwd", strict)).toThrow(/https/);
    expect(() => checkUrlForm("https://a:b@hooks.example.com/", strict)).toThrow(/credentials/);
  });

  it("refuses a name when any of its addresses is refused, and returns the checked address otherwise", async () => {
    const resolve: Resolver = async (host) =>
      host === "mixed.test" ? [{ address: "93.184.216.34", family: 4 }, { address: "10.0.0.1", family: 4 }] : [{ address: "93.184.216.34", family: 4 }];
    await expect(resolveChecked(new URL("https://mixed.test/"), strict, resolve)).rejects.toThrow(/10\.0\.0\.1/);
    await expect(resolveChecked(new URL("https://public.test/"), strict, resolve)).resolves.toEqual({ address: "93.184.216.34", family: 4 });
  });
});

describe("retry schedule", () => {
  it("grows 4× from 5 s to a 12 h cap with equal jitter, and spans the 3 days before disabling", () => {
    const high = Array.from({ length: 9 }, (_, n) => jitteredBackoffMs(RETRY_CURVE, n, 0, () => 0.999999));
    expect(high.map((ms) => Math.round(ms / 1000))).toEqual([5, 20, 80, 320, 1280, 5120, 20480, 43200, 43200]);
    const low = jitteredBackoffMs(RETRY_CURVE, 0, 0, () => 0);
    expect(low).toBe(2_500);
    // Retry-After wins when longer, up to the cap.
    expect(jitteredBackoffMs(RETRY_CURVE, 0, 60_000, () => 0)).toBe(60_000);
    // About a dozen attempts fit in the three days even at the longest delays.
    let elapsed = 0;
    let attempts = 1;
    while (elapsed < GIVE_UP_AFTER_MS) elapsed += jitteredBackoffMs(RETRY_CURVE, attempts++ - 1, 0, () => 1);
    expect(attempts).toBeGreaterThanOrEqual(10);
  });

  it("leaves table delivery's backoff as it was (5 s · 2^n, capped at 15 min)", () => {
    expect(backoffMs(0, 0, () => 0)).toBe(2_500);
    expect(backoffMs(3, 0, () => 0.999999)).toBe(40_000);
    expect(backoffMs(20, 0, () => 0.999999)).toBe(900_000);
  });
});

describe("gcs events append: one line", () => {
  const props = new Set(["5b6a7c8d-9e0f-4c1a-9e2f-3f1c2a9e7d4b"]);
  const id = "3f1c2a9e-7d4b-4c1a-9e2f-5b6a7c8d9e0f";
  it("parses a valid line with defaults", () => {
    const now = new Date("2026-11-27T10:00:00Z");
    expect(parseEventLine(JSON.stringify({ entity_type: "review", entity_id: id, operation: "create" }), props, now)).toEqual({
      entityType: "review", entityId: id, operation: "create", delta: {}, occurredAt: now, guestProfileId: null, propertyId: null, integrationId: null,
    });
  });
  it.each([
    ["[]", "not a JSON object"],
    ['{"entity_type":"review","entity_id":"x","operation":"create"}', "entity_id must be a uuid"],
    [`{"entity_type":"review","entity_id":"${id}","operation":"upsert"}`, "operation must be"],
    [`{"entity_type":"review","entity_id":"${id}","operation":"create","delta":[1]}`, "delta must be a JSON object"],
    [`{"entity_type":"review","entity_id":"${id}","operation":"create","property_id":"${id}"}`, "property_id is not a property of the group"],
    [`{"entity_type":"review","entity_id":"${id}","operation":"create","occurred_at":"2026-11-27"}`, "occurred_at must be"],
    [`{"entity_type":"review","entity_id":"${id}","operation":"create","seq":"1"}`, "unknown member seq"],
  ])("refuses %s", (line, reason) => {
    expect(parseEventLine(line, props)).toEqual(expect.stringContaining(reason));
  });
});
