// npx tsx bench/graphql-door.ts <manifest.json> [rounds] [seconds]: the service's CPU per request of
// one operation through its two doors: `GET /v1/events?guest_profile_id=…` (REST, the named operation
// ListEvents run in-process) and the same ListEvents text POSTed to /graphql (Apollo the first time,
// then the fast path, src/app/graphql-fast.ts), with `GET /healthz` beside them. The built service
// (npm run build) on a database already loaded with `gcs fixtures` (GRAPHQL_DOOR_DATABASE_URL,
// default postgres://postgres@127.0.0.1:55432/b20k; the manifest is the one that load wrote).
// Each round runs the doors back to back, in reverse order every other round, and the ratio to read
// is graphql ÷ rest within a round (a shared host's pace drifts between rounds): its median and min.
// GRAPHQL_DOOR_ROOT=<dir> measures the build in <dir> instead of this tree's (a base commit's, for before and after).
// GRAPHQL_DOOR_ONLY=graphql (a comma-separated list) runs only those doors.
// GRAPHQL_DOOR_PROFILE=<dir> writes the service's V8 CPU profile there (bench/profile-top.ts reads it).
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import autocannon from "autocannon";
import { cpuMs } from "./process";

const ROOT = process.env.GRAPHQL_DOOR_ROOT ?? path.resolve(__dirname, "..");
const [manifestPath, roundsArg, secsArg] = process.argv.slice(2);
if (!manifestPath) throw new Error("usage: tsx bench/graphql-door.ts <manifest.json> [rounds] [seconds]");
const rounds = Number(roundsArg ?? 3);
const secs = Number(secsArg ?? 5);
const key = JSON.parse(readFileSync(manifestPath, "utf8")).groups.A.credentials.api_key as string;
const port = 20000 + Math.floor(Math.random() * 10000);
const profile = process.env.GRAPHQL_DOOR_PROFILE;
const env = {
  ...process.env,
  DATABASE_URL: process.env.GRAPHQL_DOOR_DATABASE_URL ?? "postgres://postgres@127.0.0.1:55432/b20k",
  PORT: String(port),
  HOST: "127.0.0.1",
  NODE_ENV: "production",
  LOG_LEVEL: "info",
  GCS_DELIVERY_WORKER: "false",
  DATABASE_POOL_SIZE: "10",
  GCS_DELIVERY_SECRET_KEY: "rest-overhead-bench-passphrase",
  GCS_RATE_LIMIT: "1000000",
  GCS_CREDENTIAL_MAX_CONCURRENCY: "1000",
  GCS_CREDENTIAL_QUEUE_MS: "60000",
  GCS_ROLLUP_REFRESH_MS: "0",
};
const args = ["--max-semi-space-size=32", "--heap-growing-percent=50", ...(profile ? ["--cpu-prof", `--cpu-prof-dir=${profile}`] : []), "dist/cli/main.js", "serve"];
const child = spawn(path.join(ROOT, "node_modules/.bin/node"), args, { cwd: ROOT, env, stdio: ["ignore", "ignore", "inherit"] });

// The REST route's own operation and the fragment it spreads, as a dashboard would send it.
const routes = path.join(ROOT, "src/api/operations/routes");
const guests = readFileSync(path.join(routes, "guests.graphql"), "utf8");
const fragment = guests.slice(guests.indexOf("fragment GuestSummaryFields")).split("\n}\n")[0] + "\n}\n";
const operation = readFileSync(path.join(routes, "events.graphql"), "utf8").split("\n\n")[0] + "\n" + fragment;
const guest = "00000000-0000-4000-8000-000000000000"; // no events: what a request costs besides its rows
const headers = { authorization: `Bearer ${key}` };
const base = `http://127.0.0.1:${port}`;
const cases: Record<string, autocannon.Options> = {
  rest: { url: `${base}/v1/events?guest_profile_id=${guest}&limit=100`, headers },
  graphql: {
    url: `${base}/graphql`,
    method: "POST",
    headers: { ...headers, "content-type": "application/json" },
    body: JSON.stringify({ query: operation, operationName: "ListEvents", variables: { filter: { guestProfileId: guest }, limit: 100 } }),
  },
  healthz: { url: `${base}/healthz` },
};

async function main() {
  for (let i = 0; i < 100; i++) {
    try {
      if ((await fetch(`${base}/healthz`)).ok) break;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  const { url, method, body } = cases.graphql;
  const rest = await (await fetch(cases.rest.url as string, { headers })).json();
  const graphql = (await (await fetch(url as string, { method, headers: cases.graphql.headers as Record<string, string>, body: body as string })).json()) as { data: { events: unknown } };
  if (JSON.stringify(graphql.data.events) !== JSON.stringify(rest)) throw new Error(`the doors differ: ${JSON.stringify(rest)} ${JSON.stringify(graphql)}`);
  const out: Record<string, number[]> = {};
  for (let r = 0; r < rounds; r++) {
    const only = process.env.GRAPHQL_DOOR_ONLY?.split(",");
    const names = (r % 2 ? ["healthz", "graphql", "rest"] : ["rest", "graphql", "healthz"]).filter((name) => !only || only.includes(name));
    for (const name of names) {
      await autocannon({ ...cases[name], connections: 32, duration: 2 });
      const before = cpuMs(child.pid!);
      const res = await autocannon({ ...cases[name], connections: 32, duration: secs });
      const us = ((cpuMs(child.pid!) - before) * 1000) / res.requests.total;
      if (res.non2xx) console.log(name, "non2xx", res.non2xx);
      (out[name] ??= []).push(Math.round(us));
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  for (const [name, xs] of Object.entries(out)) console.log(`${name} µs/request`, xs.join(" "), "min", Math.min(...xs), "median", median(xs));
  if (!out.graphql || !out.rest) return child.kill("SIGTERM");
  const ratios = out.graphql.map((g, i) => g / out.rest[i]);
  console.log("graphql ÷ rest per round", ratios.map((x) => x.toFixed(2)).join(" "), "median", median(ratios).toFixed(2), "of mins", (Math.min(...out.graphql) / Math.min(...out.rest)).toFixed(2));
  child.kill("SIGTERM");
}
main().catch((err) => {
  child.kill();
  throw err;
});
