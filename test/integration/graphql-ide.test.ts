// The GraphQL IDE (src/graphql/ide.ts): ruru at GET /graphql for a browser, from this service only.
// In a real headless Chromium (as docs.test.ts): the page loads with no request leaving 127.0.0.1,
// and a query typed with an API key in the headers editor runs.
import { readFileSync } from "node:fs";
import path from "node:path";
import express from "express";
import type { BrowserContext } from "playwright-core";
import request from "supertest";
import { createApp } from "../../src/app";
import { loadConfig } from "../../src/config";
import { graphqlIdeInstalled, IDE_MISSING, IDE_OFF_PAGE, mountGraphqlIde } from "../../src/graphql/ide";
import { listenTestApp, startTestApp, type TestApp } from "../helpers/app";
import { launchChromium, type Chromium } from "../helpers/chromium";

const pkg = JSON.parse(readFileSync(path.join(__dirname, "../../package.json"), "utf8")) as Record<"dependencies" | "devDependencies", Record<string, string>>;

const HTML = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"; // Chromium's Accept for a page

describe("GET /graphql for a browser", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it("answers ruru's page, with a same-origin Content-Security-Policy and assets of its own", async () => {
    const res = await t.api.get("/graphql").set("Accept", HTML);
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^text\/html/);
    const policy = res.headers["content-security-policy"];
    expect(policy).toContain("default-src 'self'");
    expect(policy).toMatch(/script-src 'self'( 'sha256-[\w+/=]+')+;/);
    expect(policy).not.toMatch(/https?:|\*|unsafe-eval/);
    expect(res.text).not.toMatch(/unpkg|cdn|https?:\/\//i);
    // The headers editor starts with the header to complete, and no credential of the server's.
    const config = JSON.parse(/const RURU_CONFIG = (\{[\s\S]*?\});\s*<\/script>/.exec(res.text)![1]);
    expect(JSON.parse(config.initialHeaders)).toEqual({ Authorization: "Bearer " });
    const assets = [...res.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    expect(assets.length).toBeGreaterThan(0);
    for (const asset of assets) expect(asset).toMatch(/^\/graphql-ide\//);
    const script = await t.api.get("/graphql-ide/ruru.js");
    expect(script.status).toBe(200);
    expect(script.headers["content-type"]).toMatch(/javascript/);
    expect(script.headers["cache-control"]).toMatch(/max-age=86400/);
  });

  it("leaves API clients to the GraphQL endpoint", async () => {
    for (const accept of ["application/json", "*/*", "application/graphql-response+json, text/html;q=0.5"]) {
      const res = await t.api.get("/graphql?query=%7B__typename%7D").set("Accept", accept).set("apollo-require-preflight", "1");
      expect(res.headers["content-type"]).not.toMatch(/html/);
      expect(res.status).toBe(401); // the endpoint itself, asking for a credential
    }
    expect((await t.api.get("/graphql-ide/nope.js")).status).toBe(404);
  });

  it("is on unless NODE_ENV=production; GCS_GRAPHQL_IDE decides either way", async () => {
    expect(loadConfig({ NODE_ENV: "development" }).graphqlIde).toBe(true);
    expect(loadConfig({ NODE_ENV: "production" }).graphqlIde).toBe(false);
    expect(loadConfig({ NODE_ENV: "production", GCS_GRAPHQL_IDE: "true" }).graphqlIde).toBe(true);
    const off = await createApp({ ...t.services, config: { ...t.services.config, graphqlIde: false } });
    try {
      const page = await request(off.app).get("/graphql").set("Accept", HTML);
      expect(page.text).not.toContain("ruru");
      expect((await request(off.app).get("/graphql-ide/ruru.js")).status).toBe(404);
    } finally {
      await off.stop();
    }
  });

  it("off (as in production), tells a browser opening /graphql so, not the endpoint's CSRF refusal; API clients still reach the endpoint", async () => {
    expect(loadConfig({ NODE_ENV: "production" }).graphqlIde).toBe(false);
    const off = await createApp({ ...t.services, config: { ...t.services.config, graphqlIde: false } });
    try {
      const page = await request(off.app).get("/graphql").set("Accept", HTML);
      expect(page.status).toBe(404);
      expect(page.headers["content-type"]).toMatch(/^text\/html/);
      expect(page.text).toBe(IDE_OFF_PAGE);
      expect(page.text).toContain("The GraphQL IDE is off on this server");
      expect(page.text).toContain("NODE_ENV=production");
      expect(page.text).not.toMatch(/csrf|preflight/i);
      const api = await request(off.app).get("/graphql?query=%7B__typename%7D").set("Accept", "application/json").set("apollo-require-preflight", "1");
      expect(api.status).toBe(401); // the endpoint itself, asking for a credential
    } finally {
      await off.stop();
    }
  });

  it("is off by default where ruru is not installed (a production install), and GCS_GRAPHQL_IDE=true then fails at start, saying why", () => {
    const missing = (request: string): string => {
      throw Object.assign(new Error(`Cannot find module '${request}'`), { code: "MODULE_NOT_FOUND" });
    };
    expect(graphqlIdeInstalled()).toBe(true); // this checkout has the dev dependencies
    expect(graphqlIdeInstalled(missing)).toBe(false);
    expect(() => mountGraphqlIde(express(), missing)).toThrow(IDE_MISSING);
    expect(IDE_MISSING).toMatch(/GCS_GRAPHQL_IDE=false/);
    expect(pkg.dependencies.ruru).toBeUndefined();
    expect(pkg.devDependencies.ruru).toBeDefined();
  });
});

describe("the IDE in headless Chromium", () => {
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

  it("loads from 127.0.0.1 only, and runs a query typed with an API key in the headers editor", async () => {
    const key = t.manifest.groups.A.credentials.api_key;
    const { rows } = await t.adminPool.query<{ name: string }>("SELECT name FROM properties WHERE property_group_id = $1", [t.manifest.groups.A.id]);
    const page = await browser.newPage();
    const elsewhere: string[] = [];
    const offOrigin = (url: string) => !url.startsWith(base) && !url.startsWith("data:") && !url.startsWith("blob:");
    page.on("request", (req) => offOrigin(req.url()) && elsewhere.push(req.url()));
    const errors: string[] = [];
    page.on("pageerror", (err) => errors.push(err.message));
    page.on("console", (msg) => msg.type() === "error" && /Content.Security.Policy/i.test(msg.text()) && errors.push(msg.text()));

    const res = await page.goto(`${base}/graphql`);
    expect(res?.status()).toBe(200);
    const queryEditor = page.locator(".graphiql-query-editor .monaco-editor").first();
    await queryEditor.waitFor({ timeout: 30_000 });

    // The key is typed into the prefilled header, after "Bearer ", as a person would.
    await page.locator('button[data-name="headers"]').click();
    const headersEditor = page.locator(".graphiql-editor-tool .monaco-editor:visible").first();
    await expect(headersEditor.innerText()).resolves.toMatch(/"Authorization":\s"Bearer\s"/); // Monaco renders spaces as U+00A0
    await headersEditor.click();
    for (const press of ["ControlOrMeta+Home", "ArrowDown", "End", "ArrowLeft"]) await page.keyboard.press(press);
    await page.keyboard.type(key);

    await queryEditor.click();
    await page.keyboard.press("ControlOrMeta+A");
    await page.keyboard.insertText("query IdeProbe { properties { name } }");
    await page.keyboard.press("ControlOrMeta+Enter");

    const result = page.locator(".result-window");
    await result.getByText(rows[0].name).first().waitFor({ timeout: 30_000 });
    const shown = (await result.innerText()).replaceAll("\u00a0", " ");
    for (const { name } of rows) expect(shown).toContain(name);
    expect(elsewhere).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  });
});
