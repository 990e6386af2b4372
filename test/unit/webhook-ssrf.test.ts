// The webhook sender's pure rules: which addresses and URLs are refused, the retry schedule, and an
// NDJSON line of `gcs events append`. No socket, no DNS: the resolver is injected.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import fc from "fast-check";
import { checkUrlForm, refusalOf, resolveChecked, WebhookUrlError, type Resolver, type UrlPolicy } from "../../src/webhooks/ssrf";
import { pinnedClient, postWebhook } from "../../src/webhooks/http";
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

// Issue 40, finding 4: the spellings a caller used to get past the guard. Each is refused when an
// endpoint is created (the URL literal, and a name resolving to it) and when a delivery resolves.
describe("IPv6 spellings of forbidden IPv4 addresses", () => {
  /** [URL host, refused with the demo switch too] */
  const SPELLINGS: [string, boolean][] = [
    ["[::ffff:169.254.169.254]", true], // parsed to [::ffff:a9fe:a9fe]
    ["[::ffff:0.0.0.0]", true],
    ["169.254.170.2", true], // container credentials
    ["[fd00:ec2::254]", true], // AWS metadata over IPv6
    ["[::ffff:169.254.170.2]", true],
    ["0.0.0.0", true],
    ["[::]", true],
    ["[64:ff9b::169.254.169.254]", true],
    ["[2002:a9fe:a9fe::]", true],
    ["[::127.0.0.1]", false],
    ["[::10.0.0.1]", false],
    ["[::169.254.169.254]", true],
    ["[::ffff:0:127.0.0.1]", false],
    ["[::ffff:0:10.0.0.1]", false],
    ["[::ffff:0:169.254.169.254]", true],
    ["[64:ff9b:1::127.0.0.1]", false],
    ["[64:ff9b:1::10.0.0.1]", false],
    ["[64:ff9b:1:a9fe:a9:fe00::]", true], // the /48 layout of RFC 6052
    ["[64:ff9b::127.0.0.1]", false],
    ["[64:ff9b::10.0.0.1]", false],
    ["[2002:7f00:1::]", false],
    ["[2002:a00:1::1]", false],
    ["[2001:0:4136:e378:8000:63bf:80ff:fffe]", false], // Teredo client 127.0.0.1 (obfuscated)
    ["[2001:0:4136:e378:8000:63bf:f5ff:fffe]", false], // Teredo client 10.0.0.1
    ["[2001:0:4136:e378:8000:63bf:5601:5601]", true], // Teredo client 169.254.169.254
    ["[2001:0:a00:1::1]", false], // Teredo server 10.0.0.1
  ];
  const address = (host: string) => new URL(`http://${host}/`).hostname.replace(/^\[(.*)\]$/, "$1");
  const to = (host: string): Resolver => async () => [{ address: address(host), family: host.startsWith("[") ? 6 : 4 }];

  async function refusedAtCreation(host: string, policy: UrlPolicy) {
    const literal = (() => { try { checkUrlForm(`http://${host}:8080/hook`, policy); return false; } catch (e) { return e instanceof WebhookUrlError; } })();
    const named = await resolveChecked(checkUrlForm("http://hooks.example.com/hook", policy), policy, to(host)).then(() => false, (e) => e instanceof WebhookUrlError);
    return { literal, named };
  }
  async function refusedAtDelivery(host: string, policy: UrlPolicy) {
    const literal = await pinnedClient(`http://${host}:8080/hook`, { policy, resolve: to(host) });
    const named = await postWebhook("http://hooks.example.com/hook", {}, "{}", { policy, resolve: to(host) });
    if ("client" in literal) await literal.client.destroy();
    return { literal: "refused" in literal, named: named.refused === true };
  }

  it.each(SPELLINGS)("%s is refused with the switch off, at creation and at delivery", async (host) => {
    expect(await refusedAtCreation(host, strict)).toEqual({ literal: true, named: true });
    expect(await refusedAtDelivery(host, strict)).toEqual({ literal: true, named: true });
  });

  it.each(SPELLINGS)("%s with GCS_WEBHOOKS_ALLOW_PRIVATE=true: refused when it reaches metadata, credentials or this network (%s)", async (host, always) => {
    expect(await refusedAtCreation(host, demo)).toEqual({ literal: always, named: always });
    expect(await refusedAtDelivery(host, demo)).toEqual({ literal: always, named: always });
  });

  it("a public IPv4 address in the same forms stays reachable (a DNS64 network answers with 64:ff9b::)", () => {
    for (const a of ["::ffff:8.8.8.8", "64:ff9b::8.8.8.8", "2002:808:808::1", "2606:4700::1111"]) expect(refusalOf(a, strict)).toBeUndefined();
  });

  // Any IPv4 address of a forbidden range, written in any IPv4-embedding IPv6 form, is refused.
  const FORBIDDEN_V4: [number, number][] = [
    [0x00000000, 8], [0x0a000000, 8], [0x64400000, 10], [0x7f000000, 8], [0xa9fe0000, 16], [0xac100000, 12], [0xc0000000, 24],
    [0xc0000200, 24], [0xc0586300, 24], [0xc0a80000, 16], [0xc6120000, 15], [0xc6336400, 24], [0xcb007100, 24], [0xe0000000, 4], [0xf0000000, 4],
  ];
  const ALWAYS_V4: [number, number][] = [[0x00000000, 8], [0xa9fe0000, 16]];
  const inRange = (ranges: [number, number][]) =>
    fc.tuple(fc.constantFrom(...ranges), fc.integer({ min: 0, max: 0xffffffff })).map(([[net, len], r]) => ((net | (r & (2 ** (32 - len) - 1))) >>> 0));
  const hex = (n: number) => n.toString(16);
  const v4 = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join(".");
  const FORMS: ((n: number) => string)[] = [
    (n) => `::ffff:${v4(n)}`,
    (n) => `::ffff:${hex(n >>> 16)}:${hex(n & 0xffff)}`,
    (n) => `::ffff:0:${v4(n)}`,
    (n) => `::${v4(n)}`,
    (n) => `64:ff9b::${v4(n)}`,
    (n) => `64:ff9b:1::${v4(n)}`,
    (n) => `2002:${hex(n >>> 16)}:${hex(n & 0xffff)}::1`,
    (n) => `2001:0:4136:e378:8000:63bf:${hex((~n >>> 16) & 0xffff)}:${hex(~n & 0xffff)}`,
  ];
  it.each([["off", strict, FORBIDDEN_V4], ["on", demo, ALWAYS_V4]] as const)("property: with the switch %s, a forbidden IPv4 in any embedding form is refused", (_, policy, ranges) => {
    fc.assert(
      fc.property(inRange(ranges), fc.constantFrom(...FORMS), (n, form) => {
        // ::0.0.0.1 is ::1, IPv6's own loopback (allowed with the switch), not an embedding.
        fc.pre(!(policy.allowPrivate && n === 1 && form(n) === "::0.0.0.1"));
        const ip = form(n);
        expect(refusalOf(ip, policy)).toBeDefined();
        // The URL parser's own spelling of it too.
        expect(refusalOf(address(`[${ip}]`), policy)).toBeDefined();
      }),
      { numRuns: 2_000, seed: 20261128 },
    );
  });
});

// The address a delivery connects to is the one checked: the name is resolved once per connection
// and the socket pinned to that answer, so a later answer (DNS rebinding) is never used.
describe("DNS rebinding", () => {
  let server: Server;
  let port: number;
  let received = 0;
  beforeAll(async () => {
    server = createServer((req, res) => {
      received++;
      req.resume();
      req.on("end", () => res.end("ok"));
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it("a pinned connection keeps the checked address; a new one resolves and checks again", async () => {
    let lookups = 0;
    // First 127.0.0.1 (allowed with the demo switch), then the metadata address.
    const rebinding: Resolver = async () => [{ address: lookups++ === 0 ? "127.0.0.1" : "169.254.169.254", family: 4 }];
    const url = `http://rebind.example.com:${port}/hook`;
    const pinned = await pinnedClient(url, { policy: demo, resolve: rebinding });
    if (!("client" in pinned)) throw new Error(pinned.refused);
    const before = received;
    for (let i = 0; i < 3; i++) expect((await postWebhook(url, {}, "{}", { policy: demo, resolve: rebinding, client: pinned.client })).status).toBe(200);
    await pinned.client.destroy();
    expect(received - before).toBe(3);
    expect(lookups).toBe(1);
    const again = await postWebhook(url, {}, "{}", { policy: demo, resolve: rebinding });
    expect(again).toMatchObject({ refused: true, error: expect.stringContaining("169.254.169.254") });
    expect(received - before).toBe(3);
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
    [`{"entity_type":"review","entity_id":"${id}","operation":"create","occurred_at":"2026-02-30T10:00:00Z"}`, "occurred_at must be"],
    [`{"entity_type":"review","entity_id":"${id}","operation":"create","occurred_at":"2026-01-01T24:00:00Z"}`, "occurred_at must be"],
    [`{"entity_type":"review","entity_id":"${id}","operation":"create","occurred_at":"0000-01-01T00:00:00Z"}`, "between the years 0001 and 9999"],
    [`{"entity_type":"review","entity_id":"${id}","operation":"create","occurred_at":"9999-12-31T23:59:59-23:59"}`, "between the years 0001 and 9999"],
    [`{"entity_type":"review","entity_id":"${id}","operation":"create","delta":{"a":"\\u0000"}}`, "delta.a must be text without NUL"],
    [`{"entity_type":"review","entity_id":"${id}","operation":"create","delta":{"a":["\\udc00"]}}`, "delta.a[0] must be text without NUL characters (U+0000) or lone UTF-16 surrogates"],
    [`{"entity_type":"review","entity_id":"${id}","operation":"create","delta":{"a":"${"x".repeat(65_536)}"}}`, "delta is 65544 bytes of JSON; at most 65536"],
  ])("refuses %s", (line, reason) => {
    expect(parseEventLine(line, props)).toEqual(expect.stringContaining(reason));
  });
});
