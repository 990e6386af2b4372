// An integrator's view: a client generated from openapi.yaml (openapi-typescript types in
// test/generated, openapi-fetch) against a real listening server, walking every keyset family to
// the end by following next_cursor. tsc checks this file against the generated types, so a change
// in the document that would break integrators' code breaks this file too. Every response is also
// checked against the document, as in the rest of the suite.
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import createClient from "openapi-fetch";
import { createApp, type App } from "../../src/app";
import type { paths } from "../../client/openapi";
import { startTestApp, type TestApp } from "../helpers/app";
import { contract } from "../helpers/openapi-validate";

let t: TestApp;
let app: App;
let server: Server;
let client: ReturnType<typeof createClient<paths>>;

beforeAll(async () => {
  t = await startTestApp();
  app = await createApp(t.services);
  server = app.app.listen(0, "127.0.0.1");
  await new Promise((resolve) => server.once("listening", resolve));
  const { port } = server.address() as AddressInfo;
  client = createClient<paths>({
    baseUrl: `http://127.0.0.1:${port}`,
    headers: { Authorization: `Bearer ${t.manifest.groups.A.credentials.api_key}` },
  });
  client.use({
    async onResponse({ request, response }) {
      await contract().assertFetch(request.method, request.url, response);
    },
  });
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  await app.stop();
  await t.close();
});

interface KeysetPage<T> {
  data: T[];
  next_cursor: string | null;
  has_more: boolean;
}

/** What an integrator writes: ask for a page, follow next_cursor until it is null. */
async function walk<T>(fetchPage: (cursor: string | undefined) => Promise<{ data?: KeysetPage<T>; error?: unknown }>) {
  const rows: T[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const { data: page, error } = await fetchPage(cursor);
    if (!page) throw new Error(`page ${pages + 1} failed: ${JSON.stringify(error)}`);
    expect(page.has_more).toBe(page.next_cursor !== null);
    rows.push(...page.data);
    cursor = page.next_cursor ?? undefined;
    pages++;
  } while (cursor);
  return { rows, pages };
}

const LIMIT = 7;

/** One keyset family: how to fetch a page (typed by the generated client) and a row's identity. */
interface Family {
  name: string;
  walk: (limit: number) => Promise<{ keys: string[]; pages: number }>;
}

function family<T>(name: string, fetchPage: (limit: number, cursor: string | undefined) => Promise<{ data?: KeysetPage<T>; error?: unknown }>, keyOf: (row: T) => string): Family {
  return {
    name,
    walk: async (limit) => {
      const { rows, pages } = await walk((cursor) => fetchPage(limit, cursor));
      return { keys: rows.map(keyOf), pages };
    },
  };
}

const families: Family[] = [
  family("guests", (limit, cursor) => client.GET("/v1/guests", { params: { query: { limit, cursor } } }), (r) => r.id),
  family("master profiles", (limit, cursor) => client.GET("/v1/master-profiles", { params: { query: { limit, cursor } } }), (r) => r.id),
  family("reservations", (limit, cursor) => client.GET("/v1/reservations", { params: { query: { limit, cursor } } }), (r) => r.id),
  family("transactions", (limit, cursor) => client.GET("/v1/transactions", { params: { query: { limit, cursor } } }), (r) => r.id),
  family("consent observations", (limit, cursor) => client.GET("/v1/consents", { params: { query: { limit, cursor } } }), (r) => r.id),
  family(
    "effective consent",
    (limit, cursor) => client.GET("/v1/consents/effective", { params: { query: { limit, cursor } } }),
    (r) => `${r.contact_value} ${r.purpose}`,
  ),
  family("actions", (limit, cursor) => client.GET("/v1/actions", { params: { query: { limit, cursor } } }), (r) => r.id),
  family("reviews", (limit, cursor) => client.GET("/v1/reviews", { params: { query: { limit, cursor } } }), (r) => r.id),
  family("loyalty programs", (limit, cursor) => client.GET("/v1/loyalty/programs", { params: { query: { limit, cursor } } }), (r) => r.id),
  family("loyalty members", (limit, cursor) => client.GET("/v1/loyalty/members", { params: { query: { limit, cursor } } }), (r) => r.id),
  family("channels", (limit, cursor) => client.GET("/v1/channels", { params: { query: { limit, cursor } } }), (r) => r.id),
  family("spaces", (limit, cursor) => client.GET("/v1/spaces", { params: { query: { limit, cursor } } }), (r) => r.id),
  family("events (timeline)", (limit, cursor) => client.GET("/v1/events", { params: { query: { mode: "timeline", limit, cursor } } }), (r) => r.seq),
];

describe("a generated client walks every keyset family to the end", () => {
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
  it("reads records with the types the document promises", async () => {
    const { data: page } = await client.GET("/v1/guests", { params: { query: { limit: 1 } } });
    const guest = page!.data[0];
    const { data: one } = await client.GET("/v1/guests/{id}", { params: { path: { id: guest.id } } });
    const email: string | null = one!.data.email; // nullable in schema.graphql, so in the client too
    expect(email).toBe(guest.email);
  });

  it("gets total_count on the first master-profile page with include_total", async () => {
    const { data: first } = await client.GET("/v1/master-profiles", { params: { query: { limit: 5, include_total: "true" } } });
    const all = await families[1].walk(500);
    expect(first!.total_count).toBe(all.keys.length);
  });

  it("reads the latest event of each entity in one page (and rollup answers latest)", async () => {
    for (const mode of ["latest", "rollup"] as const) {
      const { data: page } = await client.GET("/v1/events", { params: { query: { mode, limit: 500 } } });
      expect(page!.mode).toBe("latest");
      expect(page!.next_cursor).toBeNull();
    }
  });

  it("walks the offset-paged tables", async () => {
    const ids: string[] = [];
    let offset = 0;
    for (;;) {
      const { data: page } = await client.GET("/v1/tables", { params: { query: { limit: 1, offset } } });
      ids.push(...page!.data.map((table) => table.id));
      if (!page!.has_more) break;
      offset = page!.next_offset;
    }
    expect(ids.length).toBeGreaterThan(1);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("gets the spec's error body, typed, on a failure", async () => {
    const { error, response } = await client.GET("/v1/guests", { params: { query: { limit: 0 } } });
    expect(response.status).toBe(400);
    expect(error).toMatchObject({ error: "invalid_request", detail: expect.stringContaining("limit") });
  });
});
