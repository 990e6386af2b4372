// How long the dashboard's group overview takes to complete on the demo (issue 28, target under
// 1.5 s): `npm start`'s server (the embedded PGlite default with its demo data, the same Node flags)
// on a fresh data directory, and headless Chromium signing in with the printed demo key, as a
// person would. Prints each load: from navigation and from sign-in to the overview drawn
// (body[data-ready]). Reports only; nothing here asserts a time.
// Run: npx tsx bench/dashboard-overview.ts [loads=5]
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { launchChromium } from "../test/helpers/chromium";
import { demoBanner, stopProcess } from "../test/helpers/serve";

const ROOT = path.resolve(__dirname, "..");
const NODE = path.join(ROOT, "node_modules/.bin/node");

async function main() {
  const loads = Number(process.argv[2] ?? 5);
  const dir = mkdtempSync(path.join(os.tmpdir(), "gcs-dashboard-bench-"));
  const env: NodeJS.ProcessEnv = { ...process.env, GCS_DATA_DIR: path.join(dir, "pglite"), PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "warn" };
  delete env.DATABASE_URL;
  delete env.NODE_ENV;
  // The command of `npm start` (package.json), so the flags are the demo's.
  const start = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")).scripts.start as string;
  const args = start.replace(/^node /, "").split(" ");
  const startedAt = Date.now();
  const server = spawn(NODE, args, { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
  const chrome = await launchChromium();
  try {
    const { key, base } = await demoBanner(server, 300_000);
    console.log(`demo ready (first start, demo data loaded) in ${Date.now() - startedAt} ms: ${start}`);
    const results: { navigation: number; signIn: number }[] = [];
    for (let i = 0; i < loads; i++) {
      const page = await chrome.browser.newPage();
      const errors: string[] = [];
      page.on("pageerror", (err) => errors.push(err.message));
      page.on("console", (msg) => msg.type() === "error" && errors.push(msg.text()));
      const t0 = Date.now();
      await page.goto(`${base}/dashboard`);
      await page.evaluate(() => sessionStorage.clear());
      await page.fill("#api-key", key);
      await page.click("#sign-in button[type=submit]");
      await page.waitForSelector("body[data-ready], body[data-failed]", { timeout: 60_000 });
      const navigation = Date.now() - t0;
      const failed = await page.locator("body").getAttribute("data-failed");
      if (failed || errors.length) throw new Error(`load ${i + 1} failed: ${(await page.locator("#status").textContent()) ?? ""} ${errors.join("; ")}`);
      const signIn = Number(await page.locator("body").getAttribute("data-ready"));
      const stays = await page.locator("#kpi-stays").textContent();
      results.push({ navigation, signIn });
      console.log(`load ${i + 1}${i === 0 ? " (first after start)" : ""}: ${navigation} ms from navigation, ${signIn} ms from sign-in to drawn (stays ${stays})`);
      await page.close();
    }
    const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
    const median = (xs: number[]) => sorted(xs)[Math.floor(xs.length / 2)];
    console.log(
      `median of ${loads}: ${median(results.map((r) => r.navigation))} ms from navigation, ${median(results.map((r) => r.signIn))} ms from sign-in; ` +
        `max ${Math.max(...results.map((r) => r.navigation))} ms from navigation (target under 1500 ms)`,
    );
  } finally {
    await chrome.close();
    await stopProcess(server);
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
