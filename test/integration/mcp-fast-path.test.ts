// /mcp's fast path (src/mcp/fast-path.ts) answers a single tools/call of a read tool without the SDK's
// per-request server and transport. Every request here is sent twice, with the fast path on and
// forced off (the SDK answers), and the two answers must match: status, content-type, body bytes.
import type { Response } from "supertest";
import * as fastPath from "../../src/mcp/fast-path";
import { taskTools } from "../../src/api/tools/task-tools";
import { startTestApp, type TestApp } from "../helpers/app";

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  fastPath.setMcpFastPath(true);
  await t.close();
});

const ACCEPT = "application/json, text/event-stream";
const VERSION = "2025-06-18";

interface Case {
  what: string;
  /** A JSON-RPC message (sent as JSON), or raw text. */
  body: unknown;
  headers?: Record<string, string | undefined>;
  /** Must the fast path answer it (else: must it not)? */
  fast: boolean;
}

/** The answer's bytes as sent, whatever its content-type. */
function raw(res: NodeJS.ReadableStream, done: (err: Error | null, body: Buffer) => void) {
  const chunks: Buffer[] = [];
  res.on("data", (c: Buffer) => chunks.push(c));
  res.on("end", () => done(null, Buffer.concat(chunks)));
}

async function send(token: string, c: Case): Promise<Response> {
  const headers: Record<string, string | undefined> = {
    Authorization: `Bearer ${token}`,
    Accept: ACCEPT,
    "Content-Type": "application/json",
    "MCP-Protocol-Version": VERSION,
    ...c.headers,
  };
  let r = t.api.post("/mcp");
  for (const [name, value] of Object.entries(headers)) if (value !== undefined) r = r.set(name, value);
  return r
    .buffer(true)
    .parse(raw as never)
    .send(typeof c.body === "string" ? c.body : JSON.stringify(c.body));
}

const call = (name: string, args?: Record<string, unknown>, id: unknown = 1) => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: args === undefined ? { name } : { name, arguments: args },
});

/** A tool's answer through the SDK, parsed: for the ids later calls take. */
async function result(token: string, name: string, args: Record<string, unknown> = {}): Promise<Record<string, any>> { // eslint-disable-line @typescript-eslint/no-explicit-any
  fastPath.setMcpFastPath(false);
  const res = await send(token, { what: name, body: call(name, args), fast: false });
  fastPath.setMcpFastPath(true);
  return JSON.parse(res.body.toString()).result.structuredContent ?? {};
}

async function cases(group: "A" | "B", token: string): Promise<Case[]> {
  const g = t.manifest.groups[group];
  const reservation = (await result(token, "list_reservations", { limit: 1 })).data?.[0]?.id ?? g.properties[0];
  const guest = (await result(token, "get_guest", { id: g.guest_lookup.guest_id })).data ?? {};
  const endpoint = (await result(token, "list_webhook_endpoints", {})).data?.[0]?.id ?? "00000000-0000-4000-8000-000000000000";
  const consent = g.consent_conflict;
  const read: Record<string, Record<string, unknown> | undefined> = {
    // Task tools.
    find_guests: { query: [guest.given_name, guest.family_name].filter(Boolean).join(" ") || "a" },
    guest_context: { master_profile_id: g.master_with_two_guests },
    check_contact_permission: { email: consent.contact_value, purpose: consent.purpose },
    explain_merge: { guest_profile_id: g.guest_lookup.guest_id, other_guest_profile_id: g.unclustered_guest },
    stay_performance: { from: "2024-01-01", to: "2025-12-31" },
    review_trend: {},
    guest_reach: {},
    list_webhook_endpoints: {},
    list_webhook_deliveries: { endpoint_id: endpoint },
    // Route tools (the read ones).
    list_properties: undefined, // no arguments member at all
    get_property: { id: g.properties[0] },
    list_integrations: {},
    list_guests: { limit: 3 },
    get_guest: { id: g.guest_lookup.guest_id },
    search_master_profiles: { limit: 2 },
    get_master_profile: { id: g.master_with_two_guests },
    list_reservations: { limit: 2 },
    get_reservation: { id: reservation },
    list_transactions: { limit: 2 },
    list_consent_observations: { limit: 2 },
    effective_consent: { contact_value: consent.contact_value, purpose: consent.purpose },
    list_actions: { limit: 2 },
    review_summary: {},
    list_reviews: { limit: 2 },
    list_loyalty_programs: {},
    list_loyalty_members: { limit: 2 },
    list_channels: {},
    list_spaces: {},
    guest_events: { limit: 2 },
    list_tables: {},
    preview_table: { member_type: "guest", filter_doc: { all: [] }, limit: 2 },
    get_table: { id: g.tables.bound },
    list_table_members: { id: g.tables.bound, limit: 2 },
    // The merged tools.
    list_records: { type: "reservations", limit: 2 },
    get_record: { type: "guest", id: g.guest_lookup.guest_id },
  };
  for (const tool of taskTools) expect(Object.keys(read)).toContain(tool.name); // a new task tool belongs here
  const list: Case[] = Object.entries(read).map(([name, args]) => ({ what: name, body: call(name, args), fast: true }));
  const ctx = call("guest_context", { master_profile_id: g.master_with_two_guests });
  list.push(
    // Argument errors answered by the tool (fast), and what the SDK refuses or decides (not fast).
    { what: "bad uuid", body: call("get_guest", { id: "nope" }), fast: true },
    { what: "wrong type", body: call("guest_context", { master_profile_id: 5 }), fast: true },
    { what: "missing required", body: call("find_guests", {}), fast: true },
    { what: "unknown argument", body: call("list_guests", { bogus: 1 }), fast: true },
    { what: "limit too large", body: call("list_guests", { limit: 100000 }), fast: true },
    { what: "string id", body: call("list_properties", {}, "req-7"), fast: true },
    { what: "unknown tool", body: call("no_such_tool", {}), fast: false },
    { what: "misspelt tool", body: call("list_record", { type: "guests" }), fast: false },
    { what: "master profile id to get_guest", body: call("get_guest", { id: g.master_with_two_guests }), fast: true },
    { what: "missing type", body: call("list_records", {}), fast: true },
    { what: "write tool", body: call("pause_table_destination", { id: "nope", provider: "x" }), fast: false },
    { what: "arguments array", body: { ...ctx, params: { name: "guest_context", arguments: [1] } }, fast: false },
    { what: "params _meta", body: { ...ctx, params: { ...ctx.params, _meta: { progressToken: 1 } } }, fast: false },
    { what: "null id", body: { ...ctx, id: null }, fast: false },
    { what: "fractional id", body: { ...ctx, id: 1.5 }, fast: false },
    { what: "extra member", body: { ...ctx, extra: true }, fast: false },
    { what: "jsonrpc 1.0", body: { ...ctx, jsonrpc: "1.0" }, fast: false },
    { what: "batch", body: [ctx, { ...ctx, id: 2 }], fast: false },
    { what: "notification", body: { jsonrpc: "2.0", method: "notifications/initialized" }, fast: false },
    { what: "tools/list", body: { jsonrpc: "2.0", id: 1, method: "tools/list" }, fast: false },
    { what: "not JSON", body: "{nope", fast: false },
    // Headers.
    { what: "no protocol version", body: ctx, headers: { "MCP-Protocol-Version": undefined }, fast: true },
    { what: "latest protocol version", body: ctx, headers: { "MCP-Protocol-Version": "2025-11-25" }, fast: true },
    { what: "odd protocol version", body: ctx, headers: { "MCP-Protocol-Version": "1999-01-01" }, fast: false },
    { what: "accept json only", body: ctx, headers: { Accept: "application/json" }, fast: false },
    { what: "accept any", body: ctx, headers: { Accept: "*/*" }, fast: false },
    { what: "no accept", body: ctx, headers: { Accept: undefined }, fast: false },
    { what: "charset", body: ctx, headers: { "Content-Type": "application/json; charset=utf-8" }, fast: false },
    { what: "text/plain", body: JSON.stringify(ctx), headers: { "Content-Type": "text/plain" }, fast: false },
  );
  return list;
}

describe("the fast path answers byte for byte what the SDK answers", () => {
  for (const group of ["A", "B"] as const) {
    for (const credential of ["api_key", "mcp_token", "api_key_limited"] as const) {
      it(`group ${group}, ${credential}`, async () => {
        const token = t.manifest.groups[group].credentials[credential];
        const answered = jest.spyOn(fastPath, "sendResult");
        const differ: string[] = [];
        let fastOk = 0;
        try {
          for (const c of await cases(group, token)) {
            answered.mockClear();
            fastPath.setMcpFastPath(true);
            const on = await send(token, c);
            const tookFast = answered.mock.calls.length === 1;
            fastPath.setMcpFastPath(false);
            const off = await send(token, c);
            fastPath.setMcpFastPath(true);
            expect(answered).toHaveBeenCalledTimes(tookFast ? 1 : 0); // off: never fast
            if (!c.fast && tookFast) differ.push(`${c.what}: took the fast path`);
            // api_key holds every read scope; a tool another credential's scopes leave out goes to the SDK ("not found").
            if (c.fast && !tookFast && credential === "api_key") differ.push(`${c.what}: did not take the fast path`);
            const a = `${on.status} ${on.headers["content-type"]} ${on.body.toString()}`;
            const b = `${off.status} ${off.headers["content-type"]} ${off.body.toString()}`;
            if (!on.body.equals(off.body) || a !== b) differ.push(`${c.what}:\n  fast: ${a.slice(0, 400)}\n  sdk:  ${b.slice(0, 400)}`);
            if (tookFast && on.status === 200 && !JSON.parse(on.body.toString()).result.isError) fastOk++;
          }
        } finally {
          answered.mockRestore();
        }
        expect(differ).toEqual([]);
        // The valid calls were answered, not errors.
        if (credential === "api_key") expect(fastOk).toBeGreaterThan(25);
      }, 120_000);
    }
  }
});
