// The objects made for every request stay plain, fast V8 objects. An object literal with a getter is
// built in dictionary mode, and while those held each request's context and readers, everything a
// request reached survived the young-generation collections and was promoted to the old generation:
// about 0.9 MB per scavenge on the guests page, and full collections every 1.6 s under load
// (docs/performance.md, "No per-request promotion"). V8's own %HasFastProperties says which is which.
import v8 from "node:v8";
import { createContext } from "../../src/context";
import { startTestApp, type TestApp } from "../helpers/app";

v8.setFlagsFromString("--allow-natives-syntax");
// eslint-disable-next-line @typescript-eslint/no-implied-eval
const hasFastProperties = new Function("object", "return %HasFastProperties(object)") as (object: object) => boolean;

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

test("V8 tells a literal with a getter from a plain object", () => {
  // The check itself can fail: without this the assertions below would prove nothing.
  let made: number | undefined;
  const withGetter = { get value() { return (made ??= 1); } };
  expect(hasFastProperties(withGetter)).toBe(false);
  expect(hasFastProperties({ value: 1 })).toBe(true);
});

test("a request's context, its data handle and its readers have fast properties, used or not", async () => {
  const context = await createContext(t.services, {
    authorization: `Bearer ${t.manifest.groups.A.credentials.api_key}`,
    propertyHeader: undefined,
    surface: "rest",
  });
  const readers = (context.data as unknown as { readers: object }).readers;
  for (const object of [context, context.data, readers]) expect(hasFastProperties(object)).toBe(true);
  // Their lazy members, once made, leave them fast too.
  expect(context.loaders).toBe(context.loaders);
  expect((await context.data.guests.page({}, null, 1, { id: "value" })).length).toBe(1);
  const prisma = (readers as { prisma: unknown }).prisma;
  expect(prisma).toBeDefined();
  for (const object of [context, context.data, readers]) expect(hasFastProperties(object)).toBe(true);
});

test("the statement count and timings reach the headers from the response prototype's writeHead", async () => {
  const res = await t.api.get("/v1/guests?limit=1").set("Authorization", `Bearer ${t.manifest.groups.A.credentials.api_key}`);
  expect(res.status).toBe(200);
  expect(res.headers["x-sql-statements"]).toBe("2");
  expect(res.headers["server-timing"]).toMatch(/^auth;dur=[\d.]+, exec;dur=[\d.]+, sql;dur=[\d.]+;desc="2 statements"$/);
});
