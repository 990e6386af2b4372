// The fixture data against docs/contract.md ("Test tenants") (issue 40): each manifest credential
// holds exactly the scopes the contract lists, and the fixture's destination connections are
// delivered to the built-in stand-in (or a configured base URL), never to Mailchimp or Klaviyo.
import { authenticate, type Surface } from "../../src/auth/authenticate";
import { ALL_SCOPES } from "../../src/auth/scopes";
import type { Config } from "../../src/config";
import { flushDue } from "../../src/delivery/engine";
import { DestinationError, destinationBaseUrl } from "../../src/delivery/providers";
import { deliverySecretKey, startDestinations } from "../../src/delivery/run";
import { open } from "../../src/delivery/secret-box";
import { createLogger } from "../../src/logger";
import { startTestApp, type TestApp } from "../helpers/app";

let t: TestApp;
beforeAll(async () => {
  // No background worker: the test runs the delivery engine itself.
  t = await startTestApp({ GCS_DELIVERY_WORKER: "false" });
});
afterAll(() => t.close());

describe("manifest credentials hold exactly the contract's scopes", () => {
  // The contract's words: "every read scope" is every read: scope of the vocabulary.
  const everyRead = ALL_SCOPES.filter((s) => s.startsWith("read:"));
  const readAndWriteTables = [...everyRead, "write:tables"];

  it.each(["A", "B"] as const)("group %s", async (key) => {
    const c = t.manifest.groups[key].credentials;
    const deps = { prisma: t.db.primary, pool: t.db.readerPool, sessionKey: t.services.sessionKey };
    const scopesOf = async (token: string, surface: Surface = "rest") => [...(await authenticate(token, surface, deps)).scopes].sort();
    expect(everyRead).toContain("read:webhooks");
    expect({
      api_key: await scopesOf(c.api_key),
      api_key_pinned: await scopesOf(c.api_key_pinned.token),
      api_key_limited: await scopesOf(c.api_key_limited),
      partner_token: await scopesOf(c.partner_token),
      session_token: await scopesOf(c.session_token),
      static_token: await scopesOf(c.static_token),
    }).toEqual({
      api_key: [...readAndWriteTables].sort(),
      api_key_pinned: [...everyRead].sort(),
      api_key_limited: ["read:guests"],
      partner_token: [...readAndWriteTables].sort(),
      session_token: [...ALL_SCOPES].sort(),
      static_token: [...readAndWriteTables].sort(),
    });
    expect((await authenticate(c.api_key_pinned.token, "rest", deps)).pinnedPropertyId).toBe(c.api_key_pinned.property_id);
    // The addition the webhook tests write endpoints with.
    expect(await scopesOf(c.api_key_admin)).toEqual([...ALL_SCOPES].sort());
  });
});

describe("fixture destinations never reach the providers on the internet", () => {
  const noBaseUrls = (env?: string): Config => ({
    ...t.services.config,
    ...(env ? { env } : {}),
    delivery: { ...t.services.config.delivery, mailchimpBaseUrl: undefined, klaviyoBaseUrl: undefined },
  }) as Config;
  const loopback = (url: string) => ["127.0.0.1", "[::1]", "localhost"].includes(new URL(url).hostname);

  /** Every destination connection of the fixture groups that has a binding, with its opened key. */
  async function fixtureConnections() {
    const keyring = await deliverySecretKey(t.services.config, t.db.primary);
    const rows = await t.admin.$queryRawUnsafe<{ id: string; provider: "mailchimp" | "klaviyo"; secret: string }[]>(
      `SELECT DISTINCT c.id::text, c.provider, c.secret_ciphertext AS secret FROM destination_connections c
         JOIN destination_bindings b ON b.connection_id = c.id WHERE c.property_group_id = ANY($1::uuid[])`,
      [t.manifest.groups.A.id, t.manifest.groups.B.id],
    );
    expect(new Set(rows.map((r) => r.provider))).toEqual(new Set(["mailchimp", "klaviyo"]));
    return rows.map((r) => ({ ...r, apiKey: open(r.secret, r.id, keyring) }));
  }

  it("every fixture binding resolves to the local stand-in, a configured loopback base URL, or fails; never a provider host", async () => {
    const connections = await fixtureConnections();
    // A server on DATABASE_URL without base URLs (gcs serve, gcs deliver): the stand-in it starts.
    const { destinations, standIn } = await startDestinations(noBaseUrls(), false);
    try {
      expect(standIn && loopback(standIn.url)).toBe(true);
      for (const c of connections) expect([c.provider, destinationBaseUrl(c.provider, c.apiKey, destinations)]).toEqual([c.provider, standIn!.url]);
    } finally {
      await standIn?.close();
    }
    // A configured base URL wins.
    const configured = { mailchimp: { baseUrl: "http://127.0.0.1:9/mc" }, klaviyo: { baseUrl: "http://127.0.0.1:9/kl" } };
    for (const c of connections) expect(destinationBaseUrl(c.provider, c.apiKey, configured)).toBe(configured[c.provider].baseUrl);
    // Production starts no stand-in: the binding fails, naming why, instead of calling the provider.
    const production = await startDestinations(noBaseUrls("production"), false);
    expect(production.standIn).toBeUndefined();
    for (const c of connections) {
      expect(() => destinationBaseUrl(c.provider, c.apiKey, production.destinations)).toThrow(DestinationError);
      expect(() => destinationBaseUrl(c.provider, c.apiKey, production.destinations)).toThrow(/never sent to the provider/);
    }
    // A customer's own key still goes to its provider: the rule is the key's, not the deployment's.
    expect(destinationBaseUrl("mailchimp", "0123456789abcdef0123456789abcdef-us21", production.destinations)).toBe("https://us21.api.mailchimp.com");
  });

  it("a delivery pass on DATABASE_URL sends the fixture bindings' calls to the stand-in only", async () => {
    const { destinations, standIn } = await startDestinations(noBaseUrls(), false);
    const called: string[] = [];
    // Nothing leaves the machine even if a call went astray: a non-loopback URL is recorded, never fetched.
    const guarded: typeof fetch = async (input, init) => {
      const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
      called.push(url);
      if (!loopback(url)) throw new Error(`refused by the test: ${new URL(url).hostname} is not loopback`);
      return fetch(input, init);
    };
    try {
      const reports = await flushDue(t.db.primary, {
        secretKey: await deliverySecretKey(t.services.config, t.db.primary),
        destinations,
        fetch: guarded,
        logger: createLogger("silent"),
      });
      expect(reports.length).toBeGreaterThan(0);
      expect(called.length).toBeGreaterThan(0);
      expect(called.filter((u) => !u.startsWith(standIn!.url))).toEqual([]);
      expect(standIn!.received().length).toBeGreaterThan(0);
    } finally {
      await standIn?.close();
    }
  });
});
