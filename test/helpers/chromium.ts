// Chromium driven by playwright-core, as the browser tests (/docs, the GraphQL IDE, the OAuth consent
// page) use it: headless, a fresh profile per run, nothing fetched in the background. The system's
// (Debian's /usr/bin/chromium) when installed, else npm's @sparticuz/chromium: test/helpers/binaries.ts.
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { chromium, type BrowserContext } from "playwright-core";
import { findChromium } from "./binaries";

const FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];

export interface Chromium {
  browser: BrowserContext;
  close(): Promise<void>;
}

export async function launchChromium(): Promise<Chromium> {
  const { executable } = findChromium(); // throws saying what is missing
  // A fresh profile (--user-data-dir) per run; headless: true adds --headless.
  const profile = mkdtempSync(path.join(os.tmpdir(), "gcs-chromium-"));
  // locale: npm's Chromium takes its language from the POSIX locale ("en-US@posix", not a BCP 47 tag),
  // and Intl then throws in the page (uPlot formats its axes with Intl).
  const browser = await chromium.launchPersistentContext(profile, { executablePath: executable, headless: true, args: FLAGS, locale: "en-US" });
  return {
    browser,
    async close() {
      await browser.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
