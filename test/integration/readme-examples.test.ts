// The examples of README.md and docs/*.md, run as a reader would run them against the demo's world:
// the demo data (seed 1, dates anchored to today, as `npm start` loads it) in this test's database.
// Every block meant to be pasted runs, and the first test holds the docs to that: each unit (a
// command line of an `sh` block, any other fenced block whole, an inline `npx gcs …`) is claimed by
// one of the runners below (`runnerOf`) or is in EXEMPT with the reason it cannot run here; a unit
// neither claims fails, and so does an exemption that matches nothing.
// - curl lines: fetched (`$KEY` the demo's key, `localhost:3000` this server, placeholders filled);
//   200, no GraphQL error, and every list they ask for has rows;
// - GraphQL blocks: posted to /graphql (no errors, every list answered with rows); a subscription
//   is opened at /graphql/stream;
// - `npx gcs …`: the command line itself (bin/gcs.js on the project's Node) on this test's database;
// - the typed client of docs/using-the-api.md, saved under the file name the guide gives and run
//   with the command it gives (a scratch directory with `client` linked in);
// - the filter document, the MCP question, the GET /graphql statements, and docs/receive-changes.md's
//   curl lines and Node receiver.
// "Make the demo move" of docs/receive-changes.md is not run here: demo-walkthrough.test.ts runs it.
import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { Client } from "pg";
import { resolveSessionKey } from "../../src/auth/session";
import { deliverySecretKey, messageIdKey } from "../../src/delivery/run";
import { freePort } from "../../src/embedded/server";
import { loadFixtures, type FixtureManifest } from "../../src/fixtures";
import { listenTestApp, startTestApp, type TestApp } from "../helpers/app";
import { sendDue } from "../../src/webhooks/sender";

const ROOT = path.resolve(__dirname, "../..");
const NODE_BIN = path.join(ROOT, "node_modules/.bin");
/** README.md and every docs/*.md, by path from the root. */
const DOCS: Record<string, string> = Object.fromEntries(
  ["README.md", ...readdirSync(path.join(ROOT, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)].map((file) => [
    file,
    readFileSync(path.join(ROOT, file), "utf8"),
  ]),
);
function doc(file: string): string {
  if (!(file in DOCS)) throw new Error(`no ${file}`);
  return DOCS[file];
}

/** Something a reader pastes: one command line of an `sh` block, another fenced block whole, or an inline `npx gcs …`. */
interface Unit {
  file: string;
  /** The nearest heading above it, e.g. "### Verify: Node". */
  heading: string;
  /** The block's language ("" for none), or "inline". */
  lang: string;
  text: string;
}

const RECEIVE_CHANGES = "docs/receive-changes.md";
/** Another guide's own test runs this section (demo-walkthrough.test.ts): skipped here by heading. */
const WALKTHROUGH = { file: RECEIVE_CHANGES, heading: "## Make the demo move" };

/** An `sh` block's command lines: continuations joined, comments cut, blank lines dropped. */
const commandLines = (block: string) =>
  block
    .replace(/\\\n\s*/g, " ")
    .split("\n")
    .map((l) => l.replace(/\s+#\s.*$/, "").trim())
    .filter((l) => l && !l.startsWith("#"));

/** Every unit of README.md and docs/*.md, in order, without the walkthrough section. */
function units(): Unit[] {
  const out: Unit[] = [];
  for (const [file, text] of Object.entries(DOCS)) {
    let heading = "";
    let section = "";
    let fence: { lang: string; lines: string[] } | undefined;
    for (const line of text.split("\n")) {
      const open = /^```(\w*)\s*$/.exec(line);
      if (fence) {
        if (line.startsWith("```")) {
          const skipped = file === WALKTHROUGH.file && section === WALKTHROUGH.heading;
          const body = fence.lines.join("\n");
          if (!skipped) {
            if (fence.lang === "sh") out.push(...commandLines(body).map((l) => ({ file, heading, lang: "sh", text: l })));
            else out.push({ file, heading, lang: fence.lang, text: body });
          }
          fence = undefined;
        } else fence.lines.push(line);
      } else if (open) fence = { lang: open[1], lines: [] };
      else if (/^#{1,6} /.test(line)) {
        heading = line;
        if (line.startsWith("## ")) section = line;
      } else if (!(file === WALKTHROUGH.file && section === WALKTHROUGH.heading)) {
        for (const m of line.matchAll(/`(npx gcs [^`]+)`/g)) out.push({ file, heading, lang: "inline", text: m[1] });
      }
    }
  }
  return out;
}

/** Whether an EXEMPT entry names this unit: by its whole text, or by how it starts (`prefix`). */
const names = (e: Exemption, u: Unit) => e.file === u.file && (e.prefix ? u.text.startsWith(e.text) : u.text === e.text);

/** Which test below runs a unit; undefined: none does (it is in EXEMPT, or the first test fails). */
function runnerOf(u: Unit): string | undefined {
  if (EXEMPT.some((e) => names(e, u))) return undefined;
  if (u.lang === "sh" && u.text.startsWith("curl ")) return u.file === RECEIVE_CHANGES ? "receive-changes curl" : "curl";
  if ((u.lang === "sh" || u.lang === "inline") && u.text.startsWith("npx gcs ")) return "gcs";
  if (u.lang === "graphql") return "graphql";
  if (u.file === "docs/using-the-api.md" && u.heading === "## A typed TypeScript client" && (u.lang === "ts" || u.lang === "sh")) return "typed client";
  if (u.file === "docs/filter-document.md" && u.lang === "json") return "filter document";
  if (u.file === RECEIVE_CHANGES && u.heading === "### Verify: Node" && u.lang === "js") return "receiver";
  return undefined;
}

/**
 * The units no test here runs, each with why (matched by file and the start of its text). The
 * first test fails on a unit that is neither run nor listed, and on an entry that matches none.
 */
interface Exemption {
  file: string;
  text: string;
  prefix?: true;
  why: string;
}
const EXEMPT: Exemption[] = [
  { file: "README.md", text: "npm ci && npm start", why: "installs, then serves until stopped (embedded.test.ts starts the same `gcs serve` on the embedded database)" },
  { file: "README.md", text: "npm test", why: "the whole suite, this file among it" },
  { file: "README.md", text: "KEY=gcs_…", why: "sets the key the curl lines use: they are run with the demo's key in its place" },
  { file: "docs/using-the-api.md", text: "KEY=gcs_…", why: "the same assignment" },
  { file: "docs/graphql.md", text: "npx gcs simulate --rate 5", why: "runs until stopped; demo-walkthrough.test.ts runs it (docs/receive-changes.md, \"Make the demo move\")" },
  { file: "docs/contract.md", text: "npx gcs fixtures --out manifest.json [--seed", prefix: true, why: "a synopsis with optional parts; README.md's `npx gcs fixtures --out manifest.json` runs" },
  { file: "docs/filter-document.md", text: "node := ", prefix: true, why: "the grammar of a filter document, not a command" },
  { file: "docs/mcp.md", text: "npx mcp-inspector --cli https://HOST/mcp", prefix: true, why: "for a deployment's https URL; mcp-inspector.test.ts runs the same CLI against a real server" },
  { file: "docs/operations.md", text: "scrape_configs:", prefix: true, why: "a Prometheus configuration" },
  { file: "docs/operations.md", text: "export POSTGRES_PASSWORD=", prefix: true, why: "Docker Compose: no Docker here (`npm run smoke:production` replays the image's stages)" },
  { file: "docs/operations.md", text: "docker compose up --build", prefix: true, why: "Docker" },
  { file: "docs/operations.md", text: "docker compose exec gcs", prefix: true, why: "Docker" },
  { file: "docs/performance.md", text: "npm run bench", prefix: true, why: "a benchmark of an hour at 1,000,000 guests" },
  { file: RECEIVE_CHANGES, text: "POST /hooks/gcs", prefix: true, why: "a request the receiver gets, shown, not sent" },
  { file: RECEIVE_CHANGES, text: "from flask import Flask", prefix: true, why: "Python and Flask are not installed for the tests; the Node receiver beside it runs" },
  { file: RECEIVE_CHANGES, text: "id: ", prefix: true, why: "a stream's output, shown" },
  { file: RECEIVE_CHANGES, text: "event: error", prefix: true, why: "the last message of a stream whose credential stopped being valid, shown; stream-credentials.test.ts receives it" },
  { file: RECEIVE_CHANGES, text: 'import { createClient } from "graphql-sse"', prefix: true, why: "browser code: the dashboard's Live events page runs the same client (dashboard.test.ts)" },
  { file: "docs/scaling.md", text: "[pgbouncer]", prefix: true, why: "PgBouncer's configuration, held to the tests' settings by test/unit/docs-examples.test.ts" },
  { file: "docs/scaling.md", text: "ALTER ROLE gcs SET jit = off;", prefix: true, why: "a database administrator's statement, held to the tests' settings by test/unit/docs-examples.test.ts" },
];

let t: TestApp;
let server: Awaited<ReturnType<typeof listenTestApp>>;
/** The demo's tenants: seed 1 around today, as the embedded demo loads them. */
let demo: FixtureManifest;
beforeAll(async () => {
  t = await startTestApp();
  server = await listenTestApp(t);
  demo = await loadFixtures(t.db.primary, {
    seed: 1,
    guests: 300, // as src/cli/demo.ts loads it
    sessionKey: await resolveSessionKey(t.services.config.session, t.db.primary),
    deliveryKey: await deliverySecretKey(t.services.config, t.db.primary),
    progress: () => undefined,
  });
  await untilEventsVisible(t.databaseUrl);
}, 120_000);

/**
 * /v1/events shows a transaction's events once every older transaction of the cluster has ended
 * (data/events.ts); on the shared server another file's open transaction can hold the demo's just
 * loaded events back for a while (a CI run's events curl once answered an empty timeline).
 */
async function untilEventsVisible(databaseUrl: string, timeoutMs = 60_000): Promise<void> {
  const c = new Client({ connectionString: databaseUrl });
  await c.connect();
  try {
    const { rows: [{ txid }] } = await c.query<{ txid: string }>("SELECT max(txid)::text AS txid FROM events");
    for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
      const { rows: [{ visible }] } = await c.query<{ visible: boolean }>("SELECT $1::bigint < pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS visible", [txid]);
      if (visible) return;
    }
    throw new Error(`the demo's events (txid ${txid}) were still not visible after ${timeoutMs} ms: a transaction of the shared server stayed open`);
  } finally {
    await c.end();
  }
}
afterAll(async () => {
  await server.close();
  await t.close();
});

/** A curl command line (continuations joined) → what fetch needs. */
function parseCurl(line: string): { url: string; headers: Record<string, string>; body?: string; method?: string } {
  const words = [...line.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2] ?? m[3]);
  const headers: Record<string, string> = {};
  let url = "";
  let body: string | undefined;
  let method: string | undefined;
  for (let i = 1; i < words.length; i++) {
    if (words[i] === "-s" || words[i] === "-N") continue;
    if (words[i] === "-X") method = words[++i];
    else if (words[i] === "-H") {
      const [name, ...value] = words[++i].split(":");
      headers[name.trim()] = value.join(":").trim();
    } else if (words[i] === "-d") body = words[++i];
    else url = words[i];
  }
  return { url, headers, body, method };
}

describe("README and docs examples", () => {
  it("every unit meant to be pasted is run by a test here or exempted with a reason, and every exemption names one", () => {
    const all = units();
    expect(all.filter((u) => !runnerOf(u) && !EXEMPT.some((e) => names(e, u))).map((u) => `${u.file} ${u.heading}: ${u.text.split("\n")[0]}`)).toEqual([]);
    // Each exemption names exactly one unit.
    expect(EXEMPT.filter((e) => all.filter((u) => names(e, u)).length !== 1).map((e) => `${e.file}: ${e.text}`)).toEqual([]);
    // The walkthrough section is skipped by heading, and it is there to skip.
    expect(doc(WALKTHROUGH.file)).toContain(`\n${WALKTHROUGH.heading}\n`);
    // Each runner has work.
    const runners = new Set(all.map(runnerOf));
    for (const r of ["curl", "receive-changes curl", "gcs", "graphql", "typed client", "filter document", "receiver"]) expect({ r, has: runners.has(r) }).toEqual({ r, has: true });
  });

  it("every curl line of README.md and docs/*.md answers 200 against the demo with no GraphQL error, and every list it asks for has rows", async () => {
    const A = demo.groups.A;
    const today = new Date().toISOString().slice(0, 10);
    const examples = units().filter((u) => runnerOf(u) === "curl");
    expect(examples.filter((e) => e.file === "README.md").length).toBeGreaterThanOrEqual(1);
    expect(examples.filter((e) => e.file === "docs/using-the-api.md").length).toBeGreaterThanOrEqual(20);
    const fill = (line: string) =>
      line
        .replace("$KEY", A.credentials.api_key_admin)
        .replace(/\$\(date -u \+%F\)/g, today)
        .replace("integration_id=<uuid>&source_id=<id>", `integration_id=${A.guest_lookup.integration_id}&source_id=${A.guest_lookup.source_id}`)
        .replace("X-Property-Id: <uuid>", `X-Property-Id: ${A.properties[0]}`)
        .replace("master_profile_id=<uuid>", `master_profile_id=${A.master_with_two_guests}`)
        .replace("guest_profile_id=<uuid>", `guest_profile_id=${A.guest_with_events}`)
        .replace("/v1/tables/<uuid>/", `/v1/tables/${A.tables.bound}/`)
        .replace("http://localhost:3000", server.base);
    const outcomes = [];
    for (const { file, text: command } of examples) {
      const filled = fill(command);
      expect({ command, placeholder: /<[a-z]+>/.test(filled) }).toEqual({ command, placeholder: false });
      const { url, headers, body } = parseCurl(filled);
      const res = await fetch(url, { method: body ? "POST" : "GET", headers, body });
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      const json = (await res.json()) as any;
      const lists = Array.isArray(json.data) ? [json.data] : json.data && typeof json.data === "object" ? Object.values(json.data).map((v: any) => (Array.isArray(v) ? v : v?.nodes)).filter(Array.isArray) : []; // eslint-disable-line @typescript-eslint/no-explicit-any
      outcomes.push({ file, command, status: res.status, errors: json.errors, empty: lists.some((l) => l.length === 0) });
    }
    expect(outcomes.filter((o) => o.status !== 200 || o.errors || o.empty)).toEqual([]);
  });

  it("every GraphQL block of the docs answers without errors on /graphql, each list with rows; a subscription opens at /graphql/stream", async () => {
    const blocks = units().filter((u) => runnerOf(u) === "graphql");
    expect(blocks.filter((b) => b.file === "docs/aggregates.md").length).toBeGreaterThanOrEqual(3);
    expect(blocks.filter((b) => b.file === "docs/graphql.md").length).toBeGreaterThanOrEqual(1);
    const headers = { Authorization: `Bearer ${demo.groups.A.credentials.api_key_admin}`, "Content-Type": "application/json" };
    for (const { file, text: query } of blocks) {
      if (query.trimStart().startsWith("subscription")) {
        const abort = new AbortController();
        const res = await fetch(`${server.base}/graphql/stream`, { method: "POST", headers: { ...headers, Accept: "text/event-stream" }, body: JSON.stringify({ query }), signal: abort.signal });
        expect({ file, status: res.status, type: res.headers.get("content-type") }).toEqual({ file, status: 200, type: expect.stringMatching(/^text\/event-stream/) });
        abort.abort();
        continue;
      }
      const res = await fetch(`${server.base}/graphql`, { method: "POST", headers, body: JSON.stringify({ query }) });
      const body = (await res.json()) as { data?: Record<string, unknown>; errors?: unknown[] };
      expect({ file, query, status: res.status, errors: body.errors }).toEqual({ file, query, status: 200, errors: undefined });
      const empty = Object.entries(body.data!).filter(([, v]) => Array.isArray(v) && v.length === 0);
      expect({ file, query, empty }).toEqual({ file, query, empty: [] });
    }
  });

  it("docs/aggregates.md: revenue below room revenue is the stays' other lines, the demo's goodwill credits, as it explains", async () => {
    const query = units().find((u) => runnerOf(u) === "graphql" && u.text.includes("query StaysByPropertyAndMonth"))!.text;
    const res = await fetch(`${server.base}/graphql`, {
      method: "POST",
      headers: { Authorization: `Bearer ${demo.groups.A.credentials.api_key_admin}`, "Content-Type": "application/json" },
      body: JSON.stringify({ query }),
    });
    type Money = { currency: string; revenueMinor: string; roomRevenueMinor: string };
    const { data } = (await res.json()) as { data: { stayMetrics: { propertyId: string; period: string; revenue: Money[] }[] } };
    const below = data.stayMetrics.flatMap((b) => b.revenue.filter((m) => BigInt(m.revenueMinor) < BigInt(m.roomRevenueMinor)).map((m) => ({ ...b, m })));
    expect(below.length).toBeGreaterThan(0); // the demo shows it, as the issue saw (January 2026)
    // Each bucket's revenue − room revenue is the sum of its stays' lines of another category, and
    // in the demo every one of those lines is a goodwill adjustment (a credit).
    const others = await t.admin.$queryRawUnsafe<{ property_id: string; period: string; currency: string; other: string; categories: string[] }[]>(
      `SELECT r.property_id::text, to_char(date_trunc('month', r.arrival_date), 'YYYY-MM-DD') AS period, x.currency::text,
              sum(CASE WHEN x.kind = 'refund' THEN -abs(x.amount_minor) ELSE x.amount_minor END)::text AS other,
              array_agg(DISTINCT x.kind || '/' || x.category) AS categories
         FROM reservations r JOIN transactions x ON x.reservation_id = r.id
        WHERE r.property_group_id = $1::uuid AND r.kind = 'stay' AND r.status NOT IN ('cancelled', 'no_show')
          AND r.arrival_date BETWEEN '2026-01-01' AND '2026-12-31'
          AND x.kind IN ('charge', 'adjustment', 'refund') AND x.category IS DISTINCT FROM 'accommodation'
        GROUP BY 1, 2, 3`,
      demo.groups.A.id,
    );
    for (const { propertyId, period, m } of below) {
      const row = others.find((o) => o.property_id === propertyId && o.period === period && o.currency === m.currency);
      expect({ propertyId, period, difference: String(BigInt(m.revenueMinor) - BigInt(m.roomRevenueMinor)) }).toEqual({ propertyId, period, difference: row?.other });
      expect(row!.categories).toEqual(["adjustment/goodwill"]);
    }
    expect(doc("docs/aggregates.md")).toContain("### Why revenue can be below room revenue");
  });

  it("the filter document example selects guests in the demo, and its error example is what a bad operator gets", async () => {
    const text = doc("docs/filter-document.md");
    const example = JSON.parse(/```json\n([\s\S]*?)```/.exec(text)![1]);
    const preview = (filterDoc: unknown) =>
      fetch(`${server.base}/v1/tables/preview`, {
        method: "POST",
        headers: { Authorization: `Bearer ${demo.groups.A.credentials.api_key_admin}`, "Content-Type": "application/json" },
        body: JSON.stringify({ member_type: "guest_profile", filter_doc: filterDoc }),
      });
    const res = await preview(example);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { data: unknown[] }).data.length).toBeGreaterThan(0);
    const documented = /Errors name the offending part: `([^`]+)`/.exec(text.replace(/\n/g, " "))![1];
    const bad = { and: [example.and[0], { field: "country_code", op: "like", value: "GB" }] };
    const refused = await preview(bad);
    expect(refused.status).toBe(400);
    const { detail } = (await refused.json()) as { detail: string };
    expect(detail.startsWith(documented.replace(/…$/, ""))).toBe(true);
  });

  it("the MCP question in docs/mcp.md: find_guests for Olivia Smith, then guest_context with her master profile, under 6,000 characters", async () => {
    const call = async (name: string, args: Record<string, unknown>) => {
      const res = await fetch(`${server.base}/mcp`, {
        method: "POST",
        headers: { Authorization: `Bearer ${demo.groups.A.credentials.api_key_admin}`, "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } }),
      });
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      const { result } = (await res.json()) as any;
      expect(result.isError).toBeFalsy();
      return { text: result.content[0].text as string, data: result.structuredContent };
    };
    expect(doc("docs/mcp.md")).toContain('`find_guests {"query": "Olivia\nSmith"}` then `guest_context {"master_profile_id": "<id>"}`');
    const found = await call("find_guests", { query: "Olivia Smith" });
    const olivia = found.data.candidates[0];
    expect(olivia.name).toBe("Olivia Smith");
    const context = await call("guest_context", { master_profile_id: olivia.master_profile_id });
    expect(context.data.found).toBe(true);
    const emailMarketing = context.data.consent.effective.find((c: { purpose: string }) => c.purpose === "email_marketing");
    expect(emailMarketing?.decided_by).toBeDefined();
    expect(found.text.length + context.text.length).toBeLessThan(6000);
  });

  it("the typed client of docs/using-the-api.md, saved under the name the guide gives and run with its command, finds the demo guest it names, with her stays", async () => {
    const [source, command] = units().filter((u) => runnerOf(u) === "typed client");
    expect([source.lang, command.lang]).toEqual(["ts", "sh"]);
    const intro = /Save this as `([^`]+)` in the checkout's root/.exec(doc("docs/using-the-api.md"))![1];
    expect(intro).toBe("example.mts"); // not .ts: tsx compiles a .ts file here as CommonJS, which refuses top-level await
    expect(command.text).toBe(`KEY=gcs_… npx tsx ${intro}`);
    expect(/email: "([^"]+)"/.exec(source.text)?.[1]).toBe("olivia.smith.0@example.com");
    // A scratch "checkout root": the file as written (only the host is this server's), and `./client` linked in.
    const dir = mkdtempSync(path.join(ROOT, "test", ".readme-"));
    try {
      symlinkSync(path.join(ROOT, "client"), path.join(dir, "client"));
      writeFileSync(path.join(dir, intro), source.text.replace("http://localhost:3000", server.base));
      const { stdout } = await promisify(execFile)("sh", ["-c", command.text.replace("gcs_…", demo.groups.A.credentials.api_key_admin)], {
        cwd: dir,
        // npx finds tsx in the checkout's node_modules/.bin, and tsx runs on the project's Node, as in an npm script.
        env: { ...process.env, PATH: `${NODE_BIN}${path.delimiter}${process.env.PATH}` },
        timeout: 60_000,
      });
      const lines = stdout.trim().split("\n");
      expect(lines.length).toBeGreaterThan(0);
      expect(lines[0]).toMatch(/^Olivia \[/); // given_name, then her reservations' statuses
      expect(stdout).toMatch(/'(checked_out|confirmed|cancelled|checked_in|no_show|tentative)'/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a plain GET /graphql is refused by Apollo's CSRF prevention, as docs/graphql.md says; apollo-require-preflight lifts it", async () => {
    expect(doc("docs/graphql.md")).toContain("apollo-require-preflight: 1");
    const key = t.manifest.groups.A.credentials.api_key;
    const url = `${server.base}/graphql?query=${encodeURIComponent("{ __typename }")}`;
    const plain = await fetch(url, { headers: { Authorization: `Bearer ${key}`, Accept: "application/json" } });
    expect(plain.status).toBe(400);
    expect(await plain.text()).toContain("This operation has been blocked as a potential Cross-Site Request Forgery");
    const preflight = await fetch(url, { headers: { Authorization: `Bearer ${key}`, Accept: "application/json", "apollo-require-preflight": "1" } });
    expect(preflight.status).toBe(200);
    expect(await preflight.json()).toEqual({ data: { __typename: "Query" } });
    const json = await fetch(url, { headers: { Authorization: `Bearer ${key}`, Accept: "application/json", "Content-Type": "application/json" } });
    expect(json.status).toBe(200);
  });
});

describe("docs/receive-changes.md examples", () => {
  /** The curl lines of the guide (the walkthrough section aside), filled for this server. */
  const curls = () =>
    units()
      .filter((u) => runnerOf(u) === "receive-changes curl")
      .map(({ text }) => text.replace("$KEY", demo.groups.A.credentials.api_key_admin).replace(/(^| |")localhost:3000/, `$1${server.base}`));
  const request = (line: string, signal?: AbortSignal) => {
    const { url, headers, body, method } = parseCurl(line);
    return fetch(url, { method: method ?? (body ? "POST" : "GET"), headers, body, signal });
  };

  it("creates the documented endpoint (its name resolved by an injected resolver: nothing is sent anywhere)", async () => {
    const create = curls().find((l) => l.includes("crm.example.com"))!;
    expect(create).toBeDefined();
    // The name "resolves" here, without DNS, to a public address: the endpoint is valid. No worker
    // runs in this app, and the endpoint is deleted at once: no packet leaves this machine.
    t.services.webhookResolver = async (host) => (host === "crm.example.com" ? [{ address: "93.184.216.34", family: 4 }] : []);
    try {
      const res = await request(create);
      expect(res.status).toBe(201);
      const { data } = (await res.json()) as { data: { id: string; secret: string; topics: string[] } };
      expect(data.secret).toMatch(/^whsec_/);
      expect(data.topics).toEqual(["reservation", "guest_profile"]);
      const gone = await fetch(`${server.base}/v1/webhook-endpoints/${data.id}`, { method: "DELETE", headers: { Authorization: `Bearer ${demo.groups.A.credentials.api_key_admin}` } });
      expect(gone.status).toBe(204);
    } finally {
      t.services.webhookResolver = undefined;
    }
  });

  it("the streams answer text/event-stream, REST and GraphQL, as the curl lines ask", async () => {
    // Every curl line of the guide is the endpoint's creation (the test above) or a stream (this one).
    expect(curls().filter((l) => !l.includes("crm.example.com") && !l.startsWith("curl -N"))).toEqual([]);
    const streams = curls().filter((l) => l.startsWith("curl -N"));
    expect(streams.length).toBe(2);
    for (const line of streams) {
      const abort = new AbortController();
      const res = await request(line, abort.signal);
      expect({ line, status: res.status, type: res.headers.get("content-type") }).toEqual({ line, status: 200, type: expect.stringMatching(/^text\/event-stream/) });
      abort.abort();
    }
  });

  it("the Node receiver of the guide, subscribed by the create line with its address, gets a verified event", async () => {
    const receiverSource = units().find((u) => runnerOf(u) === "receiver")!.text;
    expect(receiverSource).toContain(".listen(4000)");
    const create = curls().find((l) => l.includes("crm.example.com"))!;
    const subscribe = create.replace("https://crm.example.com/hooks/gcs", "http://127.0.0.1:4000/hooks/gcs").replace('"topics":["reservation","guest_profile"]', '"topics":["*"]');
    expect(subscribe).toContain("127.0.0.1:4000/hooks/gcs");
    const port = await freePort(); // a port no other listener holds (a random one could be the server's own)
    const config = t.services.config.webhooks as { allowPrivate: boolean };
    config.allowPrivate = true; // GCS_WEBHOOKS_ALLOW_PRIVATE=true, as a local receiver needs
    const dir = mkdtempSync(path.join(ROOT, "test", ".receiver-"));
    const abort = new AbortController();
    let endpointId: string | undefined;
    try {
      // The receiver's address only: the server's own port may begin with 4000 too.
      const res = await request(subscribe.replace("http://127.0.0.1:4000/hooks/", `http://127.0.0.1:${port}/hooks/`));
      expect(res.status).toBe(201);
      const { data } = (await res.json()) as { data: { id: string; secret: string } };
      endpointId = data.id;
      const file = path.join(dir, "receiver.mjs");
      writeFileSync(file, receiverSource.replace(".listen(4000)", `.listen(${port}, "127.0.0.1")`));
      let output = "";
      const child = execFile(path.join(ROOT, "node_modules/.bin/node"), [file], { cwd: ROOT, env: { ...process.env, WEBHOOK_SECRET: data.secret }, signal: abort.signal });
      child.stdout!.on("data", (d) => (output += d));
      child.on("error", () => undefined);
      await waitFor(async () => fetch(`http://127.0.0.1:${port}/`).then(() => true, () => false));
      // An event, as `gcs simulate` appends them; then one sending pass (what the worker does).
      const [{ entity }] = await t.admin.$queryRawUnsafe<{ entity: string }[]>(
        `INSERT INTO events (property_group_id, entity_type, entity_id, guest_profile_id, operation, delta, occurred_at)
         VALUES ($1::uuid, 'reservation', gen_random_uuid(), $2::uuid, 'update', '{"status":"checked_in"}', now()) RETURNING entity_id::text AS entity`,
        demo.groups.A.id, demo.groups.A.guest_with_events,
      );
      const key = await deliverySecretKey(t.services.config, t.db.primary);
      // The sender takes an event once every older transaction of the cluster has finished, and the
      // test files running beside this one (other databases, same cluster) may hold one for a while.
      await waitFor(async () => {
        await sendDue(t.db.primary, { secretKey: key, messageIdKey: await messageIdKey(t.db.primary), policy: { allowPrivate: true, httpsOnly: false } });
        return output.includes(`reservation.updated ${entity}`);
      }, 60_000);
      // What it prints: the webhook-id, the type and the entity (no seq: it counts every group's events).
      expect(output).toMatch(new RegExp(`^evt_[A-Za-z0-9_-]{22} reservation\\.updated ${entity}$`, "m"));
    } finally {
      abort.abort();
      config.allowPrivate = false;
      if (endpointId) await fetch(`${server.base}/v1/webhook-endpoints/${endpointId}`, { method: "DELETE", headers: { Authorization: `Bearer ${demo.groups.A.credentials.api_key_admin}` } });
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

describe("npx gcs lines of README.md and docs/*.md", () => {
  /** A line as a reader types it, from a scratch directory inside the checkout, on this test's database. */
  async function typed(line: string, dir: string) {
    return promisify(execFile)("sh", ["-c", line], {
      cwd: dir,
      env: { ...process.env, PATH: `${NODE_BIN}${path.delimiter}${process.env.PATH}`, DATABASE_URL: t.databaseUrl, LOG_LEVEL: "silent" },
      timeout: 120_000,
    });
  }
  const guests = (key: string) => fetch(`${server.base}/v1/guests?limit=1`, { headers: { Authorization: `Bearer ${key}` } });

  it("each runs and does what the text says (last in this file: `gcs fixtures` replaces the demo's tenants)", async () => {
    const lines = [...new Set(units().filter((u) => runnerOf(u) === "gcs").map((u) => u.text))];
    expect(lines).toEqual(expect.arrayContaining(["npx gcs --help", "npx gcs fixtures --out manifest.json"]));
    const dir = mkdtempSync(path.join(ROOT, "test", ".gcs-"));
    try {
      for (const line of lines) {
        const filled = line.replace("--group <uuid>", `--group ${demo.groups.A.id}`).replace("<command>", "keys");
        expect({ line, placeholder: /<[a-z]+>/.test(filled) }).toEqual({ line, placeholder: false });
        const { stdout } = await typed(filled, dir);
        if (/ --help$/.test(filled)) expect({ line, usage: /Usage: gcs/.test(stdout) }).toEqual({ line, usage: true });
        else if (filled.startsWith("npx gcs keys create")) {
          const key = /gcs_[A-Za-z0-9_-]+/.exec(stdout)?.[0];
          expect({ line, key: (await guests(key!)).status }).toEqual({ line, key: 200 });
        } else if (filled.startsWith("npx gcs fixtures --out manifest.json")) {
          const manifest = JSON.parse(readFileSync(path.join(dir, "manifest.json"), "utf8")) as FixtureManifest;
          expect({ line, key: (await guests(manifest.groups.A.credentials.api_key)).status }).toEqual({ line, key: 200 });
        } else throw new Error(`no check for ${line}: teach this test what it should do`);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 240_000);
});

async function waitFor(check: () => Promise<boolean>, ms = 20_000) {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("not there in time");
    await new Promise((r) => setTimeout(r, 100));
  }
}
