// GET /docs in a real headless Chromium (Debian's `chromium`, driven by playwright-core): the page
// renders the document with no request leaving the service (no CDN, no fonts), and shows a heading
// for every route. .ci/run installs chromium when it is missing.
import type { BrowserContext } from "playwright-core";
import { generateOpenApi } from "../../src/api/openapi";
import { listenTestApp, startTestApp, type TestApp } from "../helpers/app";
import { launchChromium, type Chromium } from "../helpers/chromium";

let t: TestApp;
let server: Awaited<ReturnType<typeof listenTestApp>> | undefined;
let base: string;
let chrome: Chromium | undefined;
let browser: BrowserContext;

beforeAll(async () => {
  t = await startTestApp();
  server = await listenTestApp(t);
  base = server.base;
  chrome = await launchChromium();
  browser = chrome.browser;
});

afterAll(async () => {
  await chrome?.close();
  await server?.close();
  await t?.close();
});

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const summaries = Object.values(generateOpenApi().document.paths as Record<string, Record<string, Json>>).flatMap((ops) =>
  Object.values(ops).map((op) => op.summary as string),
);

describe("GET /docs in headless Chromium", () => {
  it("renders a heading for every route, loading nothing from elsewhere", async () => {
    const page = await browser.newPage();
    // Off-origin loads that were not stopped by the page's Content-Security-Policy (Redoc's side
    // menu always asks for its logo from a CDN; the policy blocks it before it leaves).
    const elsewhere: string[] = [];
    const offOrigin = (url: string) => !url.startsWith(base) && !url.startsWith("data:") && !url.startsWith("blob:");
    page.on("requestfinished", (req) => offOrigin(req.url()) && elsewhere.push(req.url()));
    page.on("requestfailed", (req) => offOrigin(req.url()) && req.failure()?.errorText !== "csp" && elsewhere.push(req.url()));
    const errors: string[] = [];
    page.on("pageerror", (err) => errors.push(err.message));

    const res = await page.goto(`${base}/docs`);
    expect(res?.status()).toBe(200);
    await page.locator("h2").filter({ hasText: summaries[0] }).first().waitFor({ timeout: 30_000 });

    // Heading text, not accessible names: Redoc labels each heading's anchor with its id.
    const headings = new Set((await page.locator("h1, h2, h3").allInnerTexts()).map((h) => h.trim()));
    expect(summaries.filter((s) => !headings.has(s))).toEqual([]);
    expect(await page.title()).toBe("Guest Context Service API");
    expect(elsewhere).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  });
});
