// The rule the statement-logging isolation test holds every statement to: a statement that touches
// tenant data carries the caller's group predicate (and, for a caller narrowed to one property, the
// property), as a literal or as a bound parameter. Pure functions over logged statements, so a unit
// test can show the checker flags a leak (test/unit/tenant-isolation.test.ts).
import type { Client } from "pg";
import type { LoggedStatement } from "./statement-log";

export interface TenantTables {
  /** Tenant data: tables with a property_group_id column, and tables reached only through one. */
  group: ReadonlySet<string>;
  /** Tenant tables whose rows belong to a property: a narrowed caller's statements on them name it. */
  property: ReadonlySet<string>;
}

export interface Caller {
  groupId: string;
  /** Set for a credential pinned to a property (or a request narrowed by X-Property-Id). */
  propertyId: string | null;
}

/**
 * Tables without a property column whose rows still belong to a property through another table
 * (the tenant rules: a master profile is at the properties of its guest profiles, an integration's
 * connection at its integration's). The other property-less tenant tables (loyalty programs, table
 * members and their log, destinations, master profile counts) are group-wide by the spec.
 */
const PROPERTY_THROUGH: Record<string, string> = {
  master_profiles: "guest_profiles",
  integration_connections: "integrations",
};

/** The tenant tables of the database at `db` (schema public), derived from its catalogue. */
export async function readTenantTables(db: Client): Promise<TenantTables> {
  const { rows: tables } = await db.query<{ name: string; columns: string[] }>(`
    SELECT c.relname AS name, array_agg(a.attname::text) AS columns
    FROM pg_class c
    JOIN pg_namespace n ON n.oid = c.relnamespace
    JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
    WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p')
    GROUP BY c.relname`);
  const { rows: links } = await db.query<{ child: string; parent: string }>(`
    SELECT ch.relname AS child, pa.relname AS parent
    FROM pg_constraint k JOIN pg_class ch ON ch.oid = k.conrelid JOIN pg_class pa ON pa.oid = k.confrelid
    WHERE k.contype = 'f' AND k.connamespace = 'public'::regnamespace`);
  const columns = new Map(tables.map((t) => [t.name, t.columns]));
  const group = new Set(tables.filter((t) => t.columns.includes("property_group_id")).map((t) => t.name));
  // Reached only through a tenant parent (a partner's access tokens): tenant data too.
  for (let grew = true; grew; ) {
    grew = false;
    for (const { child, parent } of links) {
      if (group.has(parent) && !group.has(child) && !columns.get(child)?.includes("property_group_id")) {
        group.add(child);
        grew = true;
      }
    }
  }
  const property = new Set(
    [...group].filter((t) => t === "properties" || t in PROPERTY_THROUGH || columns.get(t)!.some((c) => c === "property_id" || c.endsWith("_property_id"))),
  );
  for (const [table, through] of Object.entries(PROPERTY_THROUGH)) {
    if (!group.has(table) || !property.has(through)) throw new Error(`tenant-isolation: ${table} is narrowed through ${through}, which is not a property table`);
  }
  return { group, property };
}

/** Table names after FROM, JOIN, UPDATE or INTO (and in a FROM list), quoted or schema-qualified or not. */
export function tablesIn(sql: string): string[] {
  const found = new Set<string>();
  const ref = /(?:"?public"?\s*\.\s*)?"?([a-z_][a-z0-9_]*)"?(?:\s+(?:AS\s+)?"?[a-z_][a-z0-9_]*"?)?/iy;
  const keyword = /\b(?:FROM|JOIN|UPDATE|INTO)\s+/gi;
  let k: RegExpExecArray | null;
  while ((k = keyword.exec(sql))) {
    let at = keyword.lastIndex;
    for (;;) {
      ref.lastIndex = at;
      const m = ref.exec(sql);
      if (!m) break;
      found.add(m[1].toLowerCase());
      at = ref.lastIndex;
      const comma = /\s*,\s*/y;
      comma.lastIndex = at;
      if (!comma.exec(sql)) break;
      at = comma.lastIndex;
    }
  }
  return [...found];
}

export interface Comparison {
  /** The column compared (the last part of a qualified name), lower case. */
  column: string;
  /** What it is compared with: literals and bound parameter values, array elements spread; lower case. */
  values: string[];
}

// `column = $1`, `column = 'v'`, `column IN ($1, $2)`, `column = ANY($1)`, `column = CAST($1::text AS uuid)`.
const VALUE = String.raw`(?:\$\d+|'(?:[^']|'')*')`;
const COMPARISON = new RegExp(
  String.raw`"?([a-z_][a-z0-9_]*)"?\s*(?:=\s*ANY\s*\(\s*(${VALUE})|=\s*(?:CAST\s*\(\s*)?(${VALUE})|\bIN\s*\(\s*(${VALUE}(?:\s*(?:::\s*\w+)?\s*,\s*${VALUE})*))`,
  "gi",
);

/** The column-to-value comparisons of a statement, values resolved through its bound parameters. */
export function comparisons(s: LoggedStatement): Comparison[] {
  const resolve = (ref: string): string[] => {
    const value = ref.startsWith("$") ? s.params[Number(ref.slice(1))] : ref.slice(1, -1).replaceAll("''", "'");
    if (value == null) return [];
    const v = value.toLowerCase();
    return v.startsWith("{") && v.endsWith("}") ? v.slice(1, -1).split(",").map((e) => e.replace(/"/g, "").trim()) : [v];
  };
  const found: Comparison[] = [];
  for (const m of s.text.matchAll(COMPARISON)) {
    const refs = (m[2] ?? m[3] ?? m[4]).match(new RegExp(VALUE, "g")) ?? [];
    found.push({ column: m[1].toLowerCase(), values: refs.flatMap(resolve) });
  }
  return found;
}

/** The statement compares `column` (a column name, or a test on it) with `value`. */
export function compares(s: LoggedStatement, column: (name: string) => boolean, value: string): boolean {
  const v = value.toLowerCase();
  return comparisons(s).some((c) => column(c.column) && c.values.includes(v));
}

/**
 * A statement that may leave out a predicate, and why that is safe. Kept short and explicit: each
 * entry is a hole in the net, so it names the exact statement shape it excuses.
 */
export interface Exemption {
  name: string;
  why: string;
  /** "group": excused from both predicates; "property": still needs the group, not the property. */
  excuses: "group" | "property";
  applies(s: LoggedStatement, tables: string[]): boolean;
}

const CREDENTIAL_TABLES = new Set(["api_keys", "partner_access_tokens", "partner_credentials", "mcp_tokens", "static_tokens"]);

export const EXEMPTIONS: Exemption[] = [
  {
    name: "credential lookup by token hash",
    why:
      "It runs before the caller is known, to find out who the caller is: it selects the one credential row whose " +
      "token_hash is the SHA-256 of the presented secret, and that row's group is what every later statement is held to.",
    excuses: "group",
    applies: (s, tables) => tables.length > 0 && tables.every((t) => CREDENTIAL_TABLES.has(t)) && comparisons(s).some((c) => c.column === "token_hash"),
  },
  {
    name: "consent precedence across the group",
    why:
      "Spec 1.5: a contact point's effective consent counts its observations at every property of the group (a withdrawal " +
      "at one property beats a grant at another), so these reads are group-wide even for a narrowed caller. They still carry " +
      "the group predicate, and select by contact value, so they return only the contact points the caller asked about.",
    excuses: "property",
    applies: (s, tables) => tables.length === 1 && tables[0] === "consent_observations" && comparisons(s).some((c) => c.column === "contact_value"),
  },
  {
    name: "the group's consent purposes",
    why:
      "An unknown purpose is refused with the purposes the group records consent for (issue 42), the same list for every " +
      "credential of the group, as check_contact_permission answers it: one statement probes whether the group records the " +
      "purpose (two booleans), the refusal reads the distinct purpose names (no row, no contact point); both still carry " +
      "the group predicate.",
    excuses: "property",
    applies: (s, tables) =>
      tables.length === 1 &&
      tables[0] === "consent_observations" &&
      (/^SELECT EXISTS \(SELECT 1 FROM consent_observations t WHERE .*\) AS known,\s+EXISTS \(SELECT 1 FROM consent_observations t WHERE .*\) AS any$/s.test(s.text) ||
        /^SELECT p\.purpose, count\(\*\) OVER \(\)::int AS total\s+FROM \(SELECT DISTINCT t\.purpose FROM consent_observations t WHERE .*\) p\s+ORDER BY p\.purpose LIMIT/s.test(s.text)),
  },
];

export interface Verdict {
  /** Tenant tables the statement touches (empty: not tenant data, nothing to check). */
  tables: string[];
  /** The predicate it lacks, if any (after exemptions). */
  missing?: "group" | "property";
  /** The exemption that excused it. */
  exemptedBy?: string;
  /** It was held to the caller's property too, and carries it. */
  narrowed?: true;
}

export function checkStatement(s: LoggedStatement, caller: Caller, tenant: TenantTables, exemptions: Exemption[] = EXEMPTIONS): Verdict {
  const tables = tablesIn(s.text).filter((t) => tenant.group.has(t));
  if (tables.length === 0) return { tables };
  const exemption = (kind: "group" | "property") => exemptions.find((e) => (e.excuses === "group" || e.excuses === kind) && e.applies(s, tables));
  // The group's uuid compared with property_group_id (a uuid alone could be any id).
  const hasGroup = compares(s, (c) => c === "property_group_id", caller.groupId);
  if (!hasGroup) {
    const e = exemption("group");
    return e ? { tables, exemptedBy: e.name } : { tables, missing: "group" };
  }
  const needsProperty = caller.propertyId !== null && tables.some((t) => tenant.property.has(t));
  // The property's uuid compared with a property column, or with properties.id.
  if (!needsProperty) return { tables };
  if (!compares(s, (c) => c === "id" || c === "property_id" || c.endsWith("_property_id"), caller.propertyId!)) {
    const e = exemption("property");
    return e ? { tables, exemptedBy: e.name } : { tables, missing: "property" };
  }
  return { tables, narrowed: true };
}
