// The Dockerfile and compose.yaml, kept correct without Docker (not installable here): parsed and
// checked against the repository they build from. `npm run smoke:production` runs the runtime
// stage's steps for real (npm ci --omit=dev, the CMD, the HEALTHCHECK) against PostgreSQL 15.
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { parse as parseYaml } from "yaml";
import { loadConfig } from "../../src/config";
import { MIGRATIONS_DIR } from "../../src/db/migrate";
import { SCHEMA_PATH } from "../../src/graphql/schema-source";
import { dockerIgnore, envOf, parseDockerfile, type Instruction, type Stage } from "../helpers/dockerfile";

const ROOT = path.resolve(__dirname, "../..");
const read = (file: string) => readFileSync(path.join(ROOT, file), "utf8");
const pkg = JSON.parse(read("package.json")) as { scripts: Record<string, string>; bin: Record<string, string> };
const stages = parseDockerfile(read("Dockerfile"));
const stage = (name: string) => stages.find((s) => s.name === name)!;

/** The environment variables src/config.ts reads (the keys of its zod schema). */
const CONFIG_ENV = new Set([...read("src/config.ts").matchAll(/^\s+([A-Z][A-Z0-9_]*): z\b/gm)].map((m) => m[1]));
const SECRET_NAME = /SECRET|PASSWORD|TOKEN|KEY|DATABASE_(\w+_)?URL/;

const all = (s: Stage, keyword: string) => s.instructions.filter((i) => i.keyword === keyword);
const runLine = (i: Instruction) => i.args.join(" ");
const workdir = (s: Stage) => all(s, "WORKDIR").at(-1)!.args[0];

/** Paths (relative to WORKDIR) that COPY put in the stage before instruction `before`. */
function copiedBefore(s: Stage, before: Instruction): string[] {
  const copies = s.instructions.slice(0, s.instructions.indexOf(before)).filter((i) => i.keyword === "COPY");
  return copies.flatMap((copy) => {
    const dest = path.posix.normalize(copy.args.at(-1)!);
    const sources = copy.args.slice(0, -1);
    return sources.map((source) => (copy.args.at(-1)!.endsWith("/") ? path.posix.join(dest, path.posix.basename(source)) : dest));
  });
}
const covers = (copied: string[], file: string) => copied.some((p) => p === "." || file === p || file.startsWith(`${p}/`));

const dockerIgnored = dockerIgnore(read(".dockerignore"));

describe("Dockerfile", () => {
  const build = stage("build");
  const runtime = stage("runtime");

  it("builds in two stages: the full install and `npm run build`, then production dependencies only", () => {
    expect(stages.map((s) => s.name)).toEqual(["build", "runtime"]);
    for (const s of stages) expect(s.from).toMatch(/^node:24\.\d+\.\d+-bookworm-slim$/); // pinned (node-version.test.ts)
    expect(all(build, "RUN").map(runLine)).toEqual([expect.stringMatching(/^npm ci\b(?!.*--omit)/), "npm run build"]);
    expect(all(runtime, "RUN").map(runLine)).toEqual([expect.stringMatching(/^npm ci --omit=dev --omit=optional\b/)]);
    expect(envOf(all(runtime, "ENV")[0])).toMatchObject({ NODE_ENV: "production" });
  });

  it("runs as a non-root user, listens on PORT, and has a healthcheck on /readyz", () => {
    const users = all(runtime, "USER");
    expect(users).toHaveLength(1);
    expect(users[0].args[0]).not.toMatch(/^(root|0)(:|$)/);
    const cmd = all(runtime, "CMD")[0];
    expect(runtime.instructions.indexOf(users[0])).toBeLessThan(runtime.instructions.indexOf(cmd));
    const env = Object.assign({}, ...all(runtime, "ENV").map(envOf)) as Record<string, string>;
    expect(all(runtime, "EXPOSE").map((i) => i.args[0])).toEqual([env.PORT]);
    const [healthcheck] = all(runtime, "HEALTHCHECK");
    expect(healthcheck.exec).toBe(true);
    expect(healthcheck.args[0]).toBe("node"); // node:24-slim has no curl or wget
    expect(healthcheck.args.join(" ")).toContain("process.env.PORT + '/readyz'");
  });

  it("bakes in no secret: ENV sets only settings src/config.ts reads, none of them secret", () => {
    expect(CONFIG_ENV).toContain("DATABASE_URL"); // the pattern still finds the schema's keys
    const names = stages.flatMap((s) => all(s, "ENV").flatMap((i) => Object.keys(envOf(i))));
    expect(names.length).toBeGreaterThan(0);
    for (const name of names) {
      expect(CONFIG_ENV).toContain(name);
      expect(name).not.toMatch(SECRET_NAME);
    }
    expect(stages.flatMap((s) => all(s, "ARG"))).toEqual([]);
  });

  it("copies only files that are in the repository and that .dockerignore lets through", () => {
    const sources = stages.flatMap((s) => all(s, "COPY").filter((c) => !c.flags.from).flatMap((c) => c.args.slice(0, -1)));
    expect(sources.length).toBeGreaterThan(5);
    for (const source of sources) {
      expect({ source, exists: existsSync(path.join(ROOT, source)) }).toEqual({ source, exists: true });
      expect({ source, ignored: dockerIgnored(path.posix.normalize(source)) }).toEqual({ source, ignored: false });
    }
    // The check above would pass on a .dockerignore that ignores nothing.
    expect(dockerIgnored("node_modules/graphql/package.json")).toBe(true);
    expect(dockerIgnored("src/generated/prisma/client.ts")).toBe(true);
  });

  it("has what the postinstall script needs in place before `npm ci` runs it", () => {
    expect(pkg.scripts.postinstall).toBe("node scripts/postinstall.js");
    // postinstall.js, the local modules it requires, and the patches it applies.
    const script = "scripts/postinstall.js";
    const requires = [...read(script).matchAll(/require\("\.\/([^"]+)"\)/g)].map((m) => `scripts/${m[1]}.js`);
    const needs = [script, ...requires, "patches/graphql-jit+0.8.9.patch", "package-lock.json"];
    for (const s of stages) {
      const npmCi = all(s, "RUN").find((r) => runLine(r).startsWith("npm ci"))!;
      for (const file of needs) expect({ stage: s.name, file, copied: covers(copiedBefore(s, npmCi), file) }).toMatchObject({ copied: true });
    }
    // The full install also generates the Prisma client.
    const npmCi = all(build, "RUN")[0];
    for (const file of ["prisma.config.ts", "prisma/schema.prisma"]) expect(covers(copiedBefore(build, npmCi), file)).toBe(true);
  });

  it("CMD runs the file `npm run build` produces, as `npm run start:production` does", () => {
    const [cmd] = all(runtime, "CMD");
    expect(cmd.exec).toBe(true);
    expect(cmd.args.join(" ")).toBe(pkg.scripts["start:production"]);
    const entry = cmd.args.find((a) => a.endsWith(".js"))!;
    // tsconfig.build.json compiles rootDir → outDir: the entry's source must exist...
    const { compilerOptions } = JSON.parse(read("tsconfig.build.json")) as { compilerOptions: { rootDir: string; outDir: string } };
    expect(entry.startsWith(`${compilerOptions.outDir}/`)).toBe(true);
    const source = path.posix.join(compilerOptions.rootDir, path.posix.relative(compilerOptions.outDir, entry)).replace(/\.js$/, ".ts");
    expect(existsSync(path.join(ROOT, source))).toBe(true);
    // ...be in the build stage before `npm run build`, whose output the runtime stage copies.
    expect(pkg.scripts.build).toBe("node scripts/build.js");
    const npmRunBuild = all(build, "RUN").find((r) => runLine(r) === "npm run build")!;
    for (const file of [source, "scripts/build.js", "tsconfig.build.json", "tsconfig.json"]) {
      expect({ file, copied: covers(copiedBefore(build, npmRunBuild), file) }).toMatchObject({ copied: true });
    }
    const fromBuild = all(runtime, "COPY").filter((c) => c.flags.from === "build");
    expect(fromBuild.map((c) => c.args)).toEqual([[path.posix.join(workdir(build), compilerOptions.outDir), `./${compilerOptions.outDir}`]]);
  });

  it("the runtime stage has every file the service reads at run time beside dist/", () => {
    const copied = copiedBefore(runtime, all(runtime, "CMD")[0]);
    const needs = [path.relative(ROOT, SCHEMA_PATH), path.relative(ROOT, MIGRATIONS_DIR), pkg.bin.gcs, "package.json"];
    for (const file of needs) expect({ file, copied: covers(copied, file) }).toMatchObject({ copied: true });
    expect(workdir(runtime)).toBe(workdir(build));
  });
});

describe("compose.yaml", () => {
  const compose = parseYaml(read("compose.yaml")) as {
    services: Record<string, Record<string, unknown> & { environment?: Record<string, string> }>;
  };
  const { gcs, postgres } = compose.services;
  const interpolated = (value: string) => value.replace(/\$\{[^}]*\}/g, "x");

  it("runs the image with PostgreSQL 15, started once PostgreSQL is healthy", () => {
    expect(postgres.image).toMatch(/^postgres:15\.\d+-bookworm$/); // pinned to a minor release
    expect((postgres.healthcheck as { test: string[] }).test.join(" ")).toContain("pg_isready");
    expect(gcs.build).toBe(".");
    expect(gcs.depends_on).toEqual({ postgres: { condition: "service_healthy" } });
    // gcs serve applies pending migrations at start: no command override that would skip it.
    expect(gcs.command).toBeUndefined();
    // The image's HEALTHCHECK applies unless compose overrides it.
    expect(gcs.healthcheck).toBeUndefined();
  });

  // The role layout of docs/security.md, made by compose/postgres-init.sql (row-level-security.test.ts runs it).
  const LOGINS = { DATABASE_URL: ["gcs_app", "GCS_APP_PASSWORD"], DATABASE_SYSTEM_URL: ["gcs_app_system", "GCS_SYSTEM_PASSWORD"], DATABASE_MIGRATION_URL: ["gcs_owner", "GCS_OWNER_PASSWORD"] };

  it("configures the service only with variables src/config.ts reads; its three URLs name the postgres service, each with its own login, none the superuser", () => {
    const env = gcs.environment!;
    for (const name of Object.keys(env)) expect(CONFIG_ENV).toContain(name);
    const pgEnv = postgres.environment!;
    for (const [name, [user]] of Object.entries(LOGINS)) {
      const url = new URL(interpolated(env[name]));
      expect({ name, host: url.hostname, port: url.port, user: url.username, db: url.pathname.slice(1) }).toEqual({ name, host: "postgres", port: "5432", user, db: pgEnv.POSTGRES_DB });
      expect(url.username).not.toBe(pgEnv.POSTGRES_USER);
    }
    expect(postgres.volumes).toContain("./compose/postgres-init.sql:/docker-entrypoint-initdb.d/10-gcs-roles.sql:ro");
    expect(existsSync(path.join(ROOT, "compose/postgres-init.sql"))).toBe(true);
    expect(gcs.ports).toEqual([`${env.PORT}:${env.PORT}`]);
  });

  it("the init script marks LEAKPROOF only functions that cannot raise an error showing a row's value, and makes gcs_phone_digits as its migration does", () => {
    const init = read("compose/postgres-init.sql");
    const marked = [...init.matchAll(/^ALTER FUNCTION (\S+\(.*?\)) LEAKPROOF;/gm)].map((m) => m[1]);
    // Not regexp_replace (a column as its flags prints a character of it) nor textlike (a column as
    // the pattern: the escape error answers yes or no): row-level-security.test.ts shows both leaks.
    expect(marked).toEqual([
      "pg_catalog.lower(text)",
      "pg_catalog.btrim(text)",
      "pg_catalog.translate(text, text, text)",
      "pg_catalog.text_pattern_lt(text, text)",
      "pg_catalog.text_pattern_le(text, text)",
      "pg_catalog.text_pattern_ge(text, text)",
      "pg_catalog.text_pattern_gt(text, text)",
      "public.gcs_phone_digits(text)",
    ]);
    const definition = (sql: string) => /FUNCTION public\.gcs_phone_digits\(text\)( RETURNS[\s\S]*?\)';)/.exec(sql)?.[1].replace(/\s+/g, " ");
    const migration = readFileSync(path.join(MIGRATIONS_DIR, "20261128170000_own_leakproof_lookups/migration.sql"), "utf8");
    expect(definition(init)).toMatch(/^ RETURNS text LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE SET search_path = pg_catalog AS /);
    expect(definition(init)).toBe(definition(migration));
  });

  it("holds no secret: passwords and keys come from the environment, required", () => {
    const entries = Object.values(compose.services).flatMap((s) => Object.entries(s.environment ?? {}));
    const secrets = entries.filter(([name]) => SECRET_NAME.test(name));
    expect(secrets.map(([name]) => name).sort()).toEqual([
      "DATABASE_MIGRATION_URL",
      "DATABASE_SYSTEM_URL",
      "DATABASE_URL",
      "GCS_APP_PASSWORD",
      "GCS_DELIVERY_SECRET_KEY",
      "GCS_OWNER_PASSWORD",
      "GCS_SYSTEM_PASSWORD",
      "POSTGRES_PASSWORD",
    ]);
    for (const [name, value] of secrets) {
      const login = LOGINS[name as keyof typeof LOGINS];
      if (login) expect(value).toMatch(new RegExp(`^postgresql://${login[0]}:\\$\\{${login[1]}:\\?[^}]*\\}@`));
      else expect(value).toMatch(new RegExp(`^\\$\\{${name}:\\?[^}]+\\}$`));
    }
  });

  it("gives the drain time to finish before Docker kills the process", () => {
    const grace = /^(\d+)s$/.exec(String(gcs.stop_grace_period))!;
    expect(Number(grace[1]) * 1000).toBeGreaterThan(loadConfig({}).http.shutdownTimeoutMs);
  });
});
