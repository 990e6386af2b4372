// GET /v1/properties and GET /v1/integrations: full rosters, exact roster row, isolation, narrowing.
import { startTestApp, type TestApp } from "../../helpers/app";

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const A = () => t.manifest.groups.A;
const B = () => t.manifest.groups.B;
const get = (path: string, token = A().credentials.api_key) => t.api.get(path).set("Authorization", `Bearer ${token}`);

describe("GET /v1/integrations", () => {
  it("returns the full roster as { data } with exactly the spec's six fields", async () => {
    const res = await get("/v1/integrations");
    expect(res.status).toBe(200);
    expect(Object.keys(res.body)).toEqual(["data"]);
    const count = await t.admin.integration.count({ where: { propertyGroupId: A().id } });
    expect(res.body.data).toHaveLength(count);
    for (const row of res.body.data) {
      expect(Object.keys(row).sort()).toEqual(["id", "name", "property_id", "provider", "source_ref", "status"]);
      expect(["pending", "connected", "error"]).toContain(row.status);
      expect(A().properties).toContain(row.property_id);
    }
    expect(new Set(res.body.data.map((r: { status: string }) => r.status))).toEqual(new Set(["pending", "connected", "error"]));
  });

  it("takes no cursor or offset", async () => {
    const res = await get("/v1/integrations?cursor=abc");
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("invalid_request");
  });

  it("never shows another group's integrations", async () => {
    const a = (await get("/v1/integrations")).body.data.map((r: { id: string }) => r.id);
    const b = (await get("/v1/integrations", B().credentials.api_key)).body.data.map((r: { id: string }) => r.id);
    expect(b.length).toBeGreaterThan(0);
    expect(a.filter((id: string) => b.includes(id))).toEqual([]);
  });

  it("narrows to one property with X-Property-Id", async () => {
    const property = A().properties[0];
    const res = await get("/v1/integrations").set("X-Property-Id", property);
    expect(res.body.data.length).toBeGreaterThan(0);
    for (const row of res.body.data) expect(row.property_id).toBe(property);
  });

  it("403 forbidden with scope read:properties for a key without it", async () => {
    const res = await get("/v1/integrations", A().credentials.api_key_limited);
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ error: "forbidden", scope: "read:properties" });
  });
});

describe("GET /v1/properties", () => {
  it("returns every property of the group and none of another", async () => {
    const a = await get("/v1/properties");
    expect(a.status).toBe(200);
    expect(a.body.data.map((p: { id: string }) => p.id).sort()).toEqual([...A().properties].sort());
    const b = await get("/v1/properties", B().credentials.api_key);
    expect(b.body.data.map((p: { id: string }) => p.id).sort()).toEqual([...B().properties].sort());
    const p = a.body.data[0];
    expect(p).toEqual(
      expect.objectContaining({ id: expect.any(String), name: expect.any(String), code: expect.any(String), timezone: expect.any(String), currency: expect.stringMatching(/^[A-Z]{3}$/) }),
    );
  });

  it("narrows to the pinned property for a pinned key", async () => {
    const pinned = A().credentials.api_key_pinned;
    const res = await get("/v1/properties", pinned.token);
    expect(res.body.data.map((p: { id: string }) => p.id)).toEqual([pinned.property_id]);
  });

  it("GET /v1/properties/{id}: 200 in scope, 404 for another group's property", async () => {
    expect((await get(`/v1/properties/${A().properties[0]}`)).body.data.id).toBe(A().properties[0]);
    const res = await get(`/v1/properties/${B().properties[0]}`);
    expect(res.status).toBe(404);
    expect(res.body.error).toBe("not_found");
  });
});
