// bin/gcs.js runs dist/ only when a build finished after the last change under src/; otherwise the
// TypeScript source through tsx. Checked on throwaway trees, with the real launcher file.
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

const ROOT = path.resolve(__dirname, "../..");
const { chooseEntry } = require("../../bin/gcs.js") as {
  chooseEntry(root: string, env?: Record<string, string | undefined>): { run: "dist" | "source"; reason?: string };
};

let root: string;
const at = (file: string) => path.join(root, file);
function write(file: string, text: string, secondsAgo: number) {
  mkdirSync(path.dirname(at(file)), { recursive: true });
  writeFileSync(at(file), text);
  const t = Date.now() / 1000 - secondsAgo;
  utimesSync(at(file), t, t);
}

beforeEach(() => {
  root = mkdtempSync(path.join(os.tmpdir(), "gcs-entry-"));
  write("src/cli/main.ts", "", 100);
  write("src/db/migrate.ts", "", 100);
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe("which code `gcs` runs", () => {
  it("runs the source when nothing was built, or the build did not finish", () => {
    expect(chooseEntry(root, {}).run).toBe("source");
    write("dist/cli/main.js", "", 50); // tsc wrote output, the build stamp was never written
    expect(chooseEntry(root, {}).run).toBe("source");
  });

  it("runs dist/ when the build is newer than every source file", () => {
    write("dist/.built", "", 50);
    expect(chooseEntry(root, {})).toEqual({ run: "dist" });
  });

  it("runs the source once any file under src/ changed after the build", () => {
    write("dist/.built", "", 50);
    write("src/db/migrate.ts", "// edited", 10);
    expect(chooseEntry(root, {})).toEqual({ run: "source", reason: "src/ changed after the last `npm run build`" });
  });

  it("runs dist/ where there is no src/ (the Docker image)", () => {
    rmSync(at("src"), { recursive: true });
    write("dist/.built", "", 50);
    expect(chooseEntry(root, {}).run).toBe("dist");
  });

  it("GCS_USE_SOURCE=1 or 0 decides regardless", () => {
    write("dist/.built", "", 50);
    expect(chooseEntry(root, { GCS_USE_SOURCE: "1" }).run).toBe("source");
    write("src/db/migrate.ts", "// edited", 10);
    expect(chooseEntry(root, { GCS_USE_SOURCE: "0" }).run).toBe("dist");
  });
});

describe("the launcher without tsx (a production install)", () => {
  const gcs = (env: Record<string, string> = {}) => {
    cpSync(path.join(ROOT, "bin/gcs.js"), at("bin/gcs.js"));
    const { GCS_USE_SOURCE: _ignored, ...base } = process.env;
    return spawnSync(process.execPath, [at("bin/gcs.js"), "serve"], { cwd: root, env: { ...base, ...env }, encoding: "utf8" });
  };

  it("runs the compiled command with its arguments", () => {
    write("dist/cli/main.js", 'console.log("dist", process.argv.slice(2).join(" "));', 50);
    write("dist/.built", "", 50);
    expect(gcs()).toMatchObject({ status: 0, stdout: "dist serve\n", stderr: "" });
  });

  it("says so when src/ moved on and only dist/ can run", () => {
    write("dist/cli/main.js", 'console.log("dist");', 50);
    write("dist/.built", "", 50);
    write("src/db/migrate.ts", "// edited", 10);
    expect(gcs()).toMatchObject({
      status: 0,
      stdout: "dist\n",
      stderr: "gcs: src/ changed after the last `npm run build`, and tsx is not installed: running dist/ as built\n",
    });
  });

  it("fails with the command to run when there is nothing it can run", () => {
    expect(gcs()).toMatchObject({
      status: 1,
      stdout: "",
      stderr: "gcs: no build in dist/ and no tsx to run the source: run `npm run build` (after `npm ci`)\n",
    });
  });
});

describe("npm run start:production (the compiled service, as the image's CMD runs it)", () => {
  const startProduction = () => {
    cpSync(path.join(ROOT, "package.json"), at("package.json"));
    for (const file of ["bin/gcs.js", "bin/check-build.js"]) cpSync(path.join(ROOT, file), at(file));
    return spawnSync("npm", ["run", "--silent", "start:production"], { cwd: root, env: process.env, encoding: "utf8" });
  };

  it("without a build: one line saying what to run, exit code 1, no stack", () => {
    write("dist/cli/main.js", 'console.log("dist");', 50); // a build that did not finish: no dist/.built
    expect(startProduction()).toMatchObject({
      status: 1,
      stdout: "",
      stderr: "gcs: no build in dist/: run `npm run build` first (npm run start:production runs the compiled service; npm start runs the source)\n",
    });
  });

  it("with a build: runs dist/cli/main.js serve", () => {
    write("dist/cli/main.js", 'console.log("dist", process.argv.slice(2).join(" "));', 50);
    write("dist/.built", "", 50);
    expect(startProduction()).toMatchObject({ status: 0, stdout: "dist serve\n", stderr: "" });
  });
});
