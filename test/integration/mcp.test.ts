// /mcp: a real MCP client conversation over streamable HTTP, with the same keys and page shapes.
import { startTestApp, type TestApp } from "../helpers/app";

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const rpc = (token: string, method: string, params?: unknown) =>
  t.api
    .post("/mcp")
    .set("Authorization", `Bearer ${token}`)
    .set("Accept", "application/json, text/event-stream")
    .send({ jsonrpc: "2.0", id: 1, method, params });

describe("/mcp", () => {
  it("lists the read tools and serves a guest page shaped like GET /v1/guests", async () => {
    for (const token of [t.manifest.groups.A.credentials.api_key, t.manifest.groups.A.credentials.mcp_token]) {
      const list = await rpc(token, "tools/list");
      expect(list.status).toBe(200);
      expect(list.body.result.tools.map((x: { name: string }) => x.name)).toEqual(expect.arrayContaining(["list_guests", "get_guest", "list_integrations"]));
      const call = await rpc(token, "tools/call", { name: "list_guests", arguments: { limit: "2" } });
      expect(call.status).toBe(200);
      const page = JSON.parse(call.body.result.content[0].text);
      expect(page.data).toHaveLength(2);
      expect(typeof page.next_cursor).toBe("string");
      expect(page.has_more).toBe(true);
    }
  });

  it("returns the REST error body for bad tool input", async () => {
    const call = await rpc(t.manifest.groups.A.credentials.api_key, "tools/call", { name: "list_guests", arguments: { source_id: "x" } });
    expect(call.body.result.isError).toBe(true);
    expect(JSON.parse(call.body.result.content[0].text).error).toBe("source_id requires integration_id");
  });

  it("401 without a credential, 403 for partner tokens", async () => {
    const none = await t.api.post("/mcp").send({ jsonrpc: "2.0", id: 1, method: "tools/list" });
    expect(none.status).toBe(401);
    const partner = await rpc(t.manifest.groups.A.credentials.partner_token, "tools/list");
    expect(partner.status).toBe(403);
  });
});
