// The isolation test's checker and log parser on synthetic statements: proof that the net
// (test/integration/statement-isolation.test.ts) catches a leak, whatever data layer wrote it.
import { parseLog, parseParameters, type LoggedStatement } from "../helpers/statement-log";
import { checkStatement, comparisons, EXEMPTIONS, tablesIn, type Caller, type TenantTables } from "../helpers/tenant-isolation";

const GROUP = "3f1c2a9e-7d4b-4c1a-9e2f-5b6a7c8d9e0f";
const OTHER_GROUP = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d";
const PROPERTY = "11111111-2222-4333-8444-555555555555";

const tenant: TenantTables = {
  group: new Set(["guest_profiles", "master_profiles", "loyalty_programs", "consent_observations", "api_keys", "partner_access_tokens", "properties"]),
  property: new Set(["guest_profiles", "master_profiles", "consent_observations", "properties"]),
};
const wholeGroup: Caller = { groupId: GROUP, propertyId: null };
const pinned: Caller = { groupId: GROUP, propertyId: PROPERTY };
const statement = (text: string, ...params: (string | null)[]): LoggedStatement => ({ pid: 1, application: "", text, params: [undefined as never, ...params] });

describe("tablesIn", () => {
  it("finds tables after FROM, JOIN, UPDATE and INTO, quoted, qualified, aliased or in a FROM list", () => {
    expect(tablesIn(`SELECT "t0"."id" FROM "public"."guest_profiles" AS "t0" WHERE "t0"."property_group_id" = $1`)).toEqual(["guest_profiles"]);
    expect(tablesIn("SELECT 1 FROM master_profiles t JOIN guest_profiles g ON g.master_profile_id = t.id").sort()).toEqual(["guest_profiles", "master_profiles"]);
    expect(tablesIn("SELECT 1 FROM master_profiles m, guest_profiles AS g WHERE true").sort()).toEqual(["guest_profiles", "master_profiles"]);
    expect(tablesIn("select 1 from properties where exists (select 1 from guest_profiles gp where gp.id = $1)").sort()).toEqual(["guest_profiles", "properties"]);
    expect(tablesIn("SELECT extract(epoch FROM t.created_at) FROM loyalty_programs t")).toEqual(["t", "loyalty_programs"]);
  });
});

describe("comparisons", () => {
  it("reads column-to-value comparisons, resolving bound parameters, IN lists, ANY arrays and literals", () => {
    const s = statement(
      `SELECT "t"."email" FROM "public"."guest_profiles" AS "t" WHERE ("t"."property_group_id" = $1 AND "t"."id" IN ($2,$3) AND t.property_id = ANY($4::uuid[]) AND kind = 'stay' AND lower(t.email) = lower($5) AND "t"."master_profile_id" = CAST($6::text AS uuid))`,
      GROUP, "A", null, `{${PROPERTY},"x"}`, "e@x", OTHER_GROUP,
    );
    expect(comparisons(s)).toEqual([
      { column: "property_group_id", values: [GROUP] },
      { column: "id", values: ["a"] },
      { column: "property_id", values: [PROPERTY, "x"] },
      { column: "kind", values: ["stay"] },
      { column: "master_profile_id", values: [OTHER_GROUP] },
    ]);
  });
});

describe("checkStatement", () => {
  it("flags a statement on a tenant table without the caller's group predicate", () => {
    expect(checkStatement(statement("SELECT id, email FROM guest_profiles WHERE id = $1", "0f0f0f0f-0000-4000-8000-000000000000"), wholeGroup, tenant)).toEqual({
      tables: ["guest_profiles"],
      missing: "group",
    });
  });

  it("flags another group's predicate, and the group's uuid compared with some other column", () => {
    expect(checkStatement(statement("SELECT id FROM guest_profiles t WHERE t.property_group_id = $1::uuid", OTHER_GROUP), wholeGroup, tenant).missing).toBe("group");
    expect(checkStatement(statement("SELECT id FROM master_profiles WHERE id = $1", GROUP), wholeGroup, tenant).missing).toBe("group");
    // A parameter that is bound but never referred to does not count.
    expect(checkStatement(statement("SELECT id FROM guest_profiles WHERE property_group_id IS NOT NULL", GROUP), wholeGroup, tenant).missing).toBe("group");
    // Nor the column in the select list with the group's uuid compared with something else.
    expect(checkStatement(statement(`SELECT "property_group_id" FROM guest_profiles WHERE master_profile_id = $1`, GROUP), wholeGroup, tenant).missing).toBe("group");
  });

  it("accepts the group as a bound parameter, a literal or an array element", () => {
    expect(checkStatement(statement(`SELECT 1 FROM "public"."guest_profiles" WHERE "property_group_id" = $2 AND id = $1`, PROPERTY, GROUP), wholeGroup, tenant)).toEqual({ tables: ["guest_profiles"] });
    expect(checkStatement(statement(`SELECT 1 FROM guest_profiles WHERE property_group_id = '${GROUP}'::uuid`), wholeGroup, tenant).missing).toBeUndefined();
    expect(checkStatement(statement("SELECT 1 FROM guest_profiles WHERE property_group_id = ANY($1)", `{${GROUP}}`), wholeGroup, tenant).missing).toBeUndefined();
  });

  it("ignores statements that touch no tenant table", () => {
    expect(checkStatement(statement("INSERT INTO rate_limit_counters AS c (key, window_start, hits) VALUES ($1, $2, $3)", "k", "now", "1"), wholeGroup, tenant)).toEqual({ tables: [] });
    expect(checkStatement(statement("SELECT 1"), wholeGroup, tenant)).toEqual({ tables: [] });
  });

  it("for a pinned caller, flags a property table read without the property, not a group-wide table", () => {
    const groupOnly = `SELECT 1 FROM guest_profiles WHERE property_group_id = $1`;
    expect(checkStatement(statement(groupOnly, GROUP), pinned, tenant).missing).toBe("property");
    expect(checkStatement(statement(`${groupOnly} AND property_id = $2`, GROUP, PROPERTY), pinned, tenant)).toEqual({ tables: ["guest_profiles"], narrowed: true });
    expect(checkStatement(statement("SELECT 1 FROM loyalty_programs WHERE property_group_id = $1", GROUP), pinned, tenant).missing).toBeUndefined();
    // A master profile is narrowed through its guest profiles.
    expect(checkStatement(statement("SELECT 1 FROM master_profiles WHERE property_group_id = $1", GROUP), pinned, tenant).missing).toBe("property");
  });

  it("excuses exactly the allow-listed shapes, each for what it names", () => {
    const lookup = statement("SELECT id, property_group_id, property_id, scopes FROM api_keys WHERE token_hash = $1", "ab12");
    expect(checkStatement(lookup, wholeGroup, tenant)).toEqual({ tables: ["api_keys"], exemptedBy: "credential lookup by token hash" });
    // The same table read any other way is no credential lookup.
    expect(checkStatement(statement("SELECT id FROM api_keys WHERE name = $1", "x"), wholeGroup, tenant).missing).toBe("group");
    expect(checkStatement(statement("SELECT g.id FROM api_keys a JOIN guest_profiles g ON true WHERE a.token_hash = $1", "ab12"), wholeGroup, tenant).missing).toBe("group");

    const precedence = statement("SELECT * FROM consent_observations WHERE property_group_id = $1 AND contact_value IN ($2)", GROUP, "a@example.org");
    expect(checkStatement(precedence, pinned, tenant)).toEqual({ tables: ["consent_observations"], exemptedBy: "consent precedence across the group" });
    // It still needs the group, and a consent list read without a contact is held to the property.
    expect(checkStatement(statement("SELECT * FROM consent_observations WHERE contact_value IN ($1)", "a@example.org"), pinned, tenant).missing).toBe("group");
    expect(checkStatement(statement("SELECT * FROM consent_observations WHERE property_group_id = $1", GROUP), pinned, tenant).missing).toBe("property");
    // contact_value only selected, not compared: no precedence read.
    expect(checkStatement(statement(`SELECT "contact_value" FROM consent_observations WHERE "property_group_id" = $1`, GROUP), pinned, tenant).missing).toBe("property");
    expect(EXEMPTIONS.every((e) => e.why.length > 80)).toBe(true);
  });
});

describe("parseLog", () => {
  it("reads simple and extended protocol statements, multi-line text and their bound parameters, per backend", () => {
    const log = [
      "@gcs|101|app|LOG:  execute <unnamed>: SELECT id",
      "\tFROM guest_profiles",
      "\tWHERE property_group_id = $1 AND note = $2",
      "@gcs|202|markers|LOG:  statement: SELECT 'gcs-isolation-marker-1'",
      "@gcs|101|app|DETAIL:  parameters: $1 = '3f1c2a9e-7d4b-4c1a-9e2f-5b6a7c8d9e0f', $2 = 'it''s, $3 = ''x'''",
      "@gcs|101|app|LOG:  execute s1: SELECT $1::text",
      "@gcs|101|app|DETAIL:  parameters: $1 = NULL",
      "@gcs|101|app|ERROR:  relation \"nope\" does not exist at character 15",
      "@gcs|101|app|STATEMENT:  SELECT 1 FROM nope",
      "",
    ].join("\n");
    expect(parseLog(log)).toEqual([
      { pid: 101, application: "app", text: "SELECT id\n\tFROM guest_profiles\n\tWHERE property_group_id = $1 AND note = $2", params: [undefined, GROUP, "it's, $3 = 'x'"] },
      { pid: 202, application: "markers", text: "SELECT 'gcs-isolation-marker-1'", params: [] },
      { pid: 101, application: "app", text: "SELECT $1::text", params: [undefined, null] },
    ]);
  });

  it("refuses a parameter list it cannot read rather than dropping values", () => {
    expect(parseParameters("$1 = 'a', $2 = 'b'")).toEqual([undefined, "a", "b"]);
    expect(() => parseParameters("$1 = 'a', $2 = b")).toThrow(/unparsed/);
  });
});
