// An integrator's view: the typed client in client/ (openapi-fetch over the types generated from
// openapi.yaml) against a real listening server, walking every list to the end with its async
// iterators. tsc checks this file against the generated types, so a change in the document that
// would break integrators' code breaks this file too. Every response is also checked against the
// document, as in the rest of the suite.
import {
  createGuestContextClient,
  GuestContextError,
  pages,
  unwrap,
  walk,
  type GuestContextClient,
  type GuestContextClientOptions,
  type KeysetPath,
  type ListQuery,
  type Row,
} from "../../client";
import { listenTestApp, startTestApp, type TestApp } from "../helpers/app";
import { contract } from "../helpers/openapi-validate";

/** A real server for a test app, and typed clients of it whose every response is checked. */
async function listen(t: TestApp) {
  const server = await listenTestApp(t);
  return {
    connect(options: Omit<GuestContextClientOptions, "baseUrl">): GuestContextClient {
      const c = createGuestContextClient({ baseUrl: server.base, ...options });
      c.use({
        async onResponse({ request, response }) {
          await contract().assertFetch(request.method, request.url, response);
        },
      });
      return c;
    },
    close: server.close,
  };
}

let t: TestApp;
let served: Awaited<ReturnType<typeof listen>>;
let client: GuestContextClient;

beforeAll(async () => {
  t = await startTestApp();
  served = await listen(t);
  client = served.connect({ token: t.manifest.groups.A.credentials.api_key });
});

afterAll(async () => {
  await served.close();
  await t.close();
});

const LIMIT = 7;

/** One keyset family: its path, a query, and a row's identity (typed from the path). */
interface Family {
  name: string;
  walk: (limit: number) => Promise<{ keys: string[]; pages: number }>;
}

function family<P extends KeysetPath>(name: string, path: P, keyOf: (row: Row<P>) => string, query?: ListQuery<P>): Family {
  return {
    name,
    walk: async (limit) => {
      const keys: string[] = [];
      let count = 0;
      // Every list takes `limit`; TypeScript cannot see that through the generic P.
      const withLimit = { ...query, limit } as unknown as ListQuery<P>;
      for await (const page of pages(client, path, withLimit)) {
        if (!("next_cursor" in page)) throw new Error(`${path} is not a keyset list`);
        expect(page.has_more).toBe(page.next_cursor !== null);
        keys.push(...page.data.map(keyOf));
        count++;
      }
      return { keys, pages: count };
    },
  };
}

const families: Family[] = [
  family("guests", "/v1/guests", (r) => r.id),
  family("master profiles", "/v1/master-profiles", (r) => r.id),
  family("reservations", "/v1/reservations", (r) => r.id),
  family("transactions", "/v1/transactions", (r) => r.id),
  family("consent observations", "/v1/consents", (r) => r.id),
  family("effective consent", "/v1/consents/effective", (r) => `${r.contact_value} ${r.purpose}`),
  family("actions", "/v1/actions", (r) => r.id),
  family("reviews", "/v1/reviews", (r) => r.id),
  family("loyalty programs", "/v1/loyalty/programs", (r) => r.id),
  family("loyalty members", "/v1/loyalty/members", (r) => r.id),
  family("channels", "/v1/channels", (r) => r.id),
  family("spaces", "/v1/spaces", (r) => r.id),
  family("events (timeline)", "/v1/events", (r) => r.seq, { mode: "timeline" }),
];

describe("the typed client's pages() walks every keyset family to the end", () => {
  it.each(families.map((f) => [f.name, f] as const))("%s", async (_name, f) => {
    const small = await f.walk(LIMIT);
    const whole = await f.walk(500);
    expect(new Set(small.keys).size).toBe(small.keys.length); // nothing twice
    expect(small.keys).toEqual(whole.keys); // nothing skipped, same order
    // A page is fetched with one row to spare, so a walk ends on the last full page.
    expect(small.pages).toBe(Math.max(1, Math.ceil(whole.keys.length / LIMIT)));
  });
});

describe("the rest of an integrator's day", () => {
  it("reads records with the types the document promises (unwrap)", async () => {
    const guest = unwrap(await client.GET("/v1/guests", { params: { query: { limit: 1 } } })).data[0];
    const one = unwrap(await client.GET("/v1/guests/{id}", { params: { path: { id: guest.id } } }));
    const email: string | null = one.data.email; // nullable in schema.graphql, so in the client too
    expect(email).toBe(guest.email);
  });

  it("walk() yields every row, typed, across pages and with the list's filters", async () => {
    const all = [];
    for await (const guest of walk(client, "/v1/guests", { limit: 3 })) all.push(guest);
    expect(all.length).toBe(t.manifest.groups.A.counts.guest_profiles);
    expect(all.map((g) => g.id)).toEqual((await families[0].walk(500)).keys);
    const email = all.find((g) => g.email !== null)!.email!;
    const matches: string[] = [];
    for await (const guest of walk(client, "/v1/guests", { email, limit: 1 })) matches.push(guest.email!);
    expect(matches.length).toBeGreaterThan(0);
    expect(matches.every((e) => e.toLowerCase() === email.toLowerCase())).toBe(true);
  });

  it("gets total_count on the first master-profile page with include_total", async () => {
    const first = unwrap(await client.GET("/v1/master-profiles", { params: { query: { limit: 5, include_total: "true" } } }));
    const all = await families[1].walk(500);
    expect(first.total_count).toBe(all.keys.length);
  });

  it("reads the latest event of each entity in one page (and rollup answers latest)", async () => {
    for (const mode of ["latest", "rollup"] as const) {
      const seen = [];
      for await (const page of pages(client, "/v1/events", { mode, limit: 500 })) seen.push(page);
      expect(seen.map((page) => [page.mode, page.next_cursor])).toEqual([["latest", null]]);
    }
  });

  it("walk() follows next_offset through the offset-paged tables", async () => {
    const ids: string[] = [];
    for await (const table of walk(client, "/v1/tables", { limit: 1 })) ids.push(table.id);
    expect(ids.length).toBeGreaterThan(1);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual(unwrap(await client.GET("/v1/tables", { params: { query: { limit: 500 } } })).data.map((table) => table.id));
  });

  it("throws a GuestContextError with the status, the spec's error body and the request id", async () => {
    const failure = await walk(client, "/v1/guests", { limit: 0 }).next().catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(GuestContextError);
    const err = failure as GuestContextError;
    expect(err.status).toBe(400);
    expect(err.body).toMatchObject({ error: "invalid_request", detail: expect.stringContaining("limit") });
    expect(err.message).toBe(`400 invalid_request: ${err.body.detail}`);
    expect(err.requestId).toMatch(/\S/);
    expect(err.retryAfter).toBeUndefined();
  });

  it("names the missing scope in the error of a credential without it", async () => {
    const limited = served.connect({ token: t.manifest.groups.A.credentials.api_key_limited });
    const err = (await walk(limited, "/v1/reservations").next().catch((e: unknown) => e)) as GuestContextError;
    expect(err).toBeInstanceOf(GuestContextError);
    expect([err.status, err.body.error, err.body.scope]).toEqual([403, "forbidden", "read:reservations"]);
  });

  it("sends the credential and X-Property-Id through the given fetch, and the property narrows every page", async () => {
    const A = t.manifest.groups.A;
    const sent: Request[] = [];
    const recording = (request: Request) => {
      sent.push(request.clone());
      return fetch(request);
    };
    const property = A.properties[0];
    const narrowed = served.connect({ token: A.credentials.api_key, propertyId: property, fetch: recording });
    const rows = [];
    for await (const reservation of walk(narrowed, "/v1/reservations", { limit: 50 })) rows.push(reservation);
    const everywhere = [];
    for await (const reservation of walk(client, "/v1/reservations", { limit: 500 })) everywhere.push(reservation);
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.length).toBeLessThan(everywhere.length);
    expect(rows.every((r) => r.property_id === property)).toBe(true);
    expect(sent.length).toBe(Math.max(1, Math.ceil(rows.length / 50)));
    for (const request of sent) {
      expect(request.headers.get("authorization")).toBe(`Bearer ${A.credentials.api_key}`);
      expect(request.headers.get("x-property-id")).toBe(property);
    }
    // Another group's property is refused, not silently widened.
    const foreign = served.connect({ token: A.credentials.api_key, propertyId: t.manifest.groups.B.properties[0] });
    const err = (await walk(foreign, "/v1/reservations").next().catch((e: unknown) => e)) as GuestContextError;
    expect([err.status, err.body.error]).toEqual([403, "forbidden"]);
  });
});

describe("past the rate limit", () => {
  let limitedApp: TestApp;
  let limitedServer: Awaited<ReturnType<typeof listen>>;
  beforeAll(async () => {
    limitedApp = await startTestApp({ GCS_RATE_LIMIT: "1", GCS_RATE_LIMIT_WINDOW_S: "3600" });
    limitedServer = await listen(limitedApp);
  });
  afterAll(async () => {
    await limitedServer.close();
    await limitedApp.close();
  });

  it("a GuestContextError carries Retry-After in seconds", async () => {
    const c = limitedServer.connect({ token: limitedApp.manifest.groups.A.credentials.api_key });
    await expect(walk(c, "/v1/guests", { limit: 1 }).next()).resolves.toMatchObject({ done: false });
    const err = (await walk(c, "/v1/guests", { limit: 1 }).next().catch((e: unknown) => e)) as GuestContextError;
    expect(err).toBeInstanceOf(GuestContextError);
    expect([err.status, err.body.error]).toEqual([429, "rate_limited"]);
    expect(err.retryAfter).toBeGreaterThan(0);
    expect(err.retryAfter).toBeLessThanOrEqual(3600);
    expect(err.body.detail).toContain(`retry in ${err.retryAfter} s`);
  });
});
