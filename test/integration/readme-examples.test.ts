// The examples of README.md and docs/*.md, run as a reader would run them against the demo's world:
// the demo data (seed 1, dates anchored to today, as `npm start` loads it) in this test's database.
// What runs here: every `curl -s` line with `$KEY` in an `sh` block of README.md or docs/*.md
// (placeholders filled from the demo's manifest, `$(date -u +%F)` as today), the typed client
// example of docs/using-the-api.md verbatim (its own process, through tsx, with `localhost:3000`
// pointed at a listening test server), the filter document of docs/filter-document.md, the MCP
// question of docs/mcp.md "What do we know about Olivia Smith?", and the statements of
// docs/graphql.md about GET /graphql (Apollo's CSRF refusal without a preflight header), and the
// curl lines and the Node receiver of docs/receive-changes.md.
import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { resolveSessionKey } from "../../src/auth/session";
import { deliverySecretKey } from "../../src/delivery/run";
import { loadFixtures, type FixtureManifest } from "../../src/fixtures";
import { listenTestApp, startTestApp, type TestApp } from "../helpers/app";
import { sendDue } from "../../src/webhooks/sender";

const ROOT = path.resolve(__dirname, "../..");
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

/** The first fenced block of `lang` after the heading `heading` of `file`. */
function codeBlock(file: string, heading: string, lang: string): string {
  const text = doc(file);
  const at = text.indexOf(`\n${heading}\n`);
  if (at < 0) throw new Error(`${file} has no heading ${heading}`);
  const m = new RegExp("```" + lang + "\\n([\\s\\S]*?)```").exec(text.slice(at));
  if (!m) throw new Error(`no ${lang} block under ${heading} in ${file}`);
  return m[1];
}

/** Every `curl -s` line that uses `$KEY`, continuations joined, from the `sh` blocks of README.md and docs/*.md. */
function curlExamples(): { file: string; command: string }[] {
  return Object.entries(DOCS).flatMap(([file, text]) =>
    [...text.matchAll(/```sh\n([\s\S]*?)```/g)].flatMap((m) =>
      m[1]
        .replace(/\\\n\s*/g, " ")
        .split("\n")
        .filter((l) => l.startsWith("curl -s ") && l.includes("$KEY"))
        .map((command) => ({ file, command })),
    ),
  );
}

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
}, 120_000);
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
  it("every curl line of README.md and docs/*.md answers 200 against the demo, and every list it asks for has rows", async () => {
    const A = demo.groups.A;
    const today = new Date().toISOString().slice(0, 10);
    const examples = curlExamples();
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
    for (const { file, command } of examples) {
      const filled = fill(command);
      expect({ command, placeholder: /<[a-z]+>/.test(filled) }).toEqual({ command, placeholder: false });
      const { url, headers, body } = parseCurl(filled);
      const res = await fetch(url, { method: body ? "POST" : "GET", headers, body });
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      const json = (await res.json()) as any;
      const rows = Array.isArray(json.data) ? json.data.length : json.data?.guests ? json.data.guests.nodes.length : undefined;
      outcomes.push({ file, command, status: res.status, empty: rows === 0 });
    }
    expect(outcomes.filter((o) => o.status !== 200 || o.empty)).toEqual([]);
  });

  it("the filter document example selects guests in the demo, and its error example is what a bad operator gets", async () => {
    const text = doc("docs/filter-document.md");
    const example = JSON.parse(/```json\n([\s\S]*?)```/.exec(text)![1]);
    const preview = (filterDoc: unknown) =>
      fetch(`${server.base}/v1/tables/preview`, {
        method: "POST",
        headers: { Authorization: `Bearer ${demo.groups.A.credentials.api_key}`, "Content-Type": "application/json" },
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
        headers: { Authorization: `Bearer ${demo.groups.A.credentials.api_key}`, "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
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

  it("the typed client example of docs/using-the-api.md runs as written and finds the demo guest it names, with her stays", async () => {
    const example = codeBlock("docs/using-the-api.md", "## A typed TypeScript client", "ts");
    const email = /email: "([^"]+)"/.exec(example)?.[1];
    expect(email).toBe("olivia.smith.0@example.com");
    // Run from a scratch directory inside the checkout, so `./client` and its dependencies resolve.
    const dir = mkdtempSync(path.join(ROOT, "test", ".readme-"));
    try {
      const file = path.join(dir, "example.ts");
      const source = example.replace('from "./client"', `from ${JSON.stringify(path.join(ROOT, "client"))}`).replace("http://localhost:3000", server.base);
      // The snippet is a module body with top-level await; tsx runs .ts as CommonJS here, so wrap it.
      const [imports, ...body] = source.split("\n\n");
      writeFileSync(file, `${imports}\n\n(async () => {\n${body.join("\n\n")}\n})().catch((e) => { console.error(e); process.exit(1); });\n`);
      const { stdout } = await promisify(execFile)(path.join(ROOT, "node_modules/.bin/tsx"), [file], {
        cwd: ROOT,
        env: { ...process.env, GCS_API_KEY: demo.groups.A.credentials.api_key },
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
  const FILE = "docs/receive-changes.md";
  /** The curl lines of the guide's sh blocks (continuations joined, comments cut), filled for this server. */
  const curls = () =>
    [...doc(FILE).matchAll(/```sh\n([\s\S]*?)```/g)]
      .flatMap((m) => m[1].replace(/\\\n\s*/g, " ").split("\n"))
      .filter((l) => l.startsWith("curl "))
      .map((l) =>
        l
          .replace(/\s+#.*$/, "")
          .replace(/\$(GCS_)?KEY/, demo.groups.A.credentials.api_key_admin)
          .replace(/(^| |")localhost:3000/, `$1${server.base}`),
      );
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
    const streams = curls().filter((l) => l.startsWith("curl -N"));
    expect(streams.length).toBe(3);
    for (const line of streams) {
      const abort = new AbortController();
      const res = await request(line, abort.signal);
      expect({ line, status: res.status, type: res.headers.get("content-type") }).toEqual({ line, status: 200, type: expect.stringMatching(/^text\/event-stream/) });
      abort.abort();
    }
  });

  it("makes the demo move: the Node receiver of the guide, subscribed by the curl line, gets a verified event", async () => {
    const receiverSource = codeBlock(FILE, "### Verify: Node", "js");
    const subscribe = curls().find((l) => l.startsWith("curl -X POST") && l.includes("127.0.0.1:4000"))!;
    expect(subscribe).toBeDefined();
    const port = 40_000 + Math.floor(Math.random() * 20_000);
    const config = t.services.config.webhooks as { allowPrivate: boolean };
    config.allowPrivate = true; // GCS_WEBHOOKS_ALLOW_PRIVATE=true, as the guide's npm start line says
    const dir = mkdtempSync(path.join(ROOT, "test", ".receiver-"));
    const abort = new AbortController();
    let endpointId: string | undefined;
    try {
      const res = await request(subscribe.replace("127.0.0.1:4000", `127.0.0.1:${port}`));
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
      const [{ seq }] = await t.admin.$queryRawUnsafe<{ seq: string }[]>(
        `INSERT INTO events (property_group_id, entity_type, entity_id, guest_profile_id, operation, delta, occurred_at)
         VALUES ($1::uuid, 'reservation', gen_random_uuid(), $2::uuid, 'update', '{"status":"checked_in"}', now()) RETURNING seq::text AS seq`,
        demo.groups.A.id, demo.groups.A.guest_with_events,
      );
      const key = await deliverySecretKey(t.services.config, t.db.primary);
      // The sender takes an event once every older transaction of the cluster has finished, and the
      // test files running beside this one (other databases, same cluster) may hold one for a while.
      await waitFor(async () => {
        await sendDue(t.db.primary, { secretKey: key, policy: { allowPrivate: true, httpsOnly: false } });
        return output.includes(`reservation.updated ${seq}`);
      }, 60_000);
      expect(output).toContain(`reservation.updated ${seq}`);
    } finally {
      abort.abort();
      config.allowPrivate = false;
      if (endpointId) await fetch(`${server.base}/v1/webhook-endpoints/${endpointId}`, { method: "DELETE", headers: { Authorization: `Bearer ${demo.groups.A.credentials.api_key_admin}` } });
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

async function waitFor(check: () => Promise<boolean>, ms = 20_000) {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("not there in time");
    await new Promise((r) => setTimeout(r, 100));
  }
}
