// The filter document language of filter-defined tables and of table previews:
//
//   node  := { "and": [node, …] } | { "or": [node, …] } | { "not": node } | leaf
//   leaf  := { "field": <field>, "op": <operator>, "value": <value> }
//
// Fields depend on the member type (FIELDS below). `consent.<purpose>` is the effective consent of
// the member's e-mail for that purpose across the group (granted, withdrawn, denied or unknown),
// decided by the same precedence as everywhere else. Validation errors name the offending part by
// its path, e.g. `filter_doc.and[1].op`.
import type { PrismaClient } from "../generated/prisma/client";
import { invalidRequest } from "../graphql/errors";
import { parseDate, parseInstant } from "../graphql/scalars";
import { isUuid } from "../auth/scope";
import { effectiveConsent, type ConsentStatus } from "../consent/precedence";
import { escapeLike } from "../db/like";

export type MemberType = "guest_profile" | "master_profile";
type FieldType = "string" | "uuid" | "date" | "instant" | "boolean" | "consent";
type Where = Record<string, unknown>;

interface Field {
  type: FieldType;
  /** Prisma field, or a function building the where for relation-backed fields. */
  column: string | ((op: string, value: unknown) => Where);
}

const common: Record<string, Field> = {
  given_name: { type: "string", column: "givenName" },
  family_name: { type: "string", column: "familyName" },
  email: { type: "string", column: "email" },
  phone: { type: "string", column: "phone" },
  language: { type: "string", column: "language" },
  country_code: { type: "string", column: "countryCode" },
  birth_date: { type: "date", column: "birthDate" },
  created_at: { type: "instant", column: "createdAt" },
  updated_at: { type: "instant", column: "updatedAt" },
};

export const FIELDS: Record<MemberType, Record<string, Field>> = {
  guest_profile: {
    ...common,
    city: { type: "string", column: "city" },
    vip_code: { type: "string", column: "vipCode" },
    source_id: { type: "string", column: "sourceId" },
    property_id: { type: "uuid", column: "propertyId" },
    integration_id: { type: "uuid", column: "integrationId" },
    master_profile_id: { type: "uuid", column: "masterProfileId" },
  },
  master_profile: {
    ...common,
    vip: { type: "boolean", column: "vip" },
    // A master profile is "at" a property when one of its guest profiles is there.
    property_id: {
      type: "uuid",
      column: (op, value) => {
        const ids = Array.isArray(value) ? value : [value];
        const some = { guests: { some: { propertyId: { in: ids } } } };
        return op === "neq" || op === "not_in" ? { NOT: some } : some;
      },
    },
  },
};

const OPERATORS: Record<FieldType, string[]> = {
  string: ["eq", "neq", "in", "not_in", "contains", "starts_with", "exists"],
  uuid: ["eq", "neq", "in", "not_in", "exists"],
  date: ["eq", "gt", "gte", "lt", "lte", "exists"],
  instant: ["eq", "gt", "gte", "lt", "lte", "exists"],
  boolean: ["eq"],
  consent: ["eq", "neq", "in", "not_in"],
};

const CONSENT_VALUES = ["granted", "withdrawn", "denied", "unknown"];
const MAX_DEPTH = 8;
const MAX_LEAVES = 100;
const MAX_LIST = 500;

interface ConsentLeaf {
  purpose: string;
  op: string;
  values: string[];
}

/** A validated document: the Prisma where, once consent leaves have their contact sets. */
export interface CompiledFilter {
  consentPurposes: string[];
  build(consent: Map<string, ConsentSets>): Where;
}

export type ConsentSets = Record<"granted" | "withdrawn" | "denied", string[]> & { observed: string[] };

const fail = (path: string, message: string) => invalidRequest(`${path}: ${message}`);

export function compileFilter(memberType: MemberType, doc: unknown, path = "filter_doc"): CompiledFilter {
  const fields = FIELDS[memberType];
  const purposes = new Set<string>();
  let leaves = 0;

  function node(value: unknown, at: string, depth: number): (c: Map<string, ConsentSets>) => Where {
    if (depth > MAX_DEPTH) throw fail(at, `nesting deeper than ${MAX_DEPTH} levels`);
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      throw fail(at, 'expected an object: {"and": […]}, {"or": […]}, {"not": …} or {"field", "op", "value"}');
    }
    const obj = value as Record<string, unknown>;
    const keys = Object.keys(obj);
    if (keys.length === 1 && (keys[0] === "and" || keys[0] === "or")) {
      const list = obj[keys[0]];
      if (!Array.isArray(list) || list.length === 0) throw fail(`${at}.${keys[0]}`, "expected a non-empty array of nodes");
      const children = list.map((child, i) => node(child, `${at}.${keys[0]}[${i}]`, depth + 1));
      const key = keys[0] === "and" ? "AND" : "OR";
      return (c) => ({ [key]: children.map((build) => build(c)) });
    }
    if (keys.length === 1 && keys[0] === "not") {
      const child = node(obj.not, `${at}.not`, depth + 1);
      return (c) => ({ NOT: child(c) });
    }
    return leaf(obj, at);
  }

  function leaf(obj: Record<string, unknown>, at: string): (c: Map<string, ConsentSets>) => Where {
    if (++leaves > MAX_LEAVES) throw fail(at, `more than ${MAX_LEAVES} conditions`);
    const unknownKeys = Object.keys(obj).filter((k) => !["field", "op", "value"].includes(k));
    if (unknownKeys.length) throw fail(at, `unknown member ${unknownKeys[0]}; a condition has field, op and value`);
    const name = obj.field;
    if (typeof name !== "string") throw fail(`${at}.field`, "expected a field name");
    const isConsent = /^consent\.[a-z][a-z0-9_]{0,63}$/.test(name);
    const field: Field | undefined = isConsent ? { type: "consent", column: "email" } : fields[name];
    if (!field) {
      throw fail(`${at}.field`, `unknown field ${name} for ${memberType}; fields: ${Object.keys(fields).join(", ")}, consent.<purpose>`);
    }
    const op = obj.op;
    const allowed = OPERATORS[field.type];
    if (typeof op !== "string" || !allowed.includes(op)) {
      throw fail(`${at}.op`, `${JSON.stringify(op)} is not an operator for ${name}; use one of ${allowed.join(", ")}`);
    }
    const value = checkValue(field.type, op, obj.value, `${at}.value`);
    if (field.type === "consent") {
      const purpose = name.slice("consent.".length);
      purposes.add(purpose);
      const consentLeaf: ConsentLeaf = { purpose, op, values: Array.isArray(value) ? (value as string[]) : [value as string] };
      return (c) => consentWhere(consentLeaf, c.get(purpose)!);
    }
    if (typeof field.column === "function") {
      const build = field.column;
      return () => build(op, value);
    }
    const where = columnWhere(field.column, field.type, op, value);
    return () => where;
  }

  const build = node(doc, path, 1);
  return { consentPurposes: [...purposes], build };
}

function checkValue(type: FieldType, op: string, value: unknown, at: string): unknown {
  if (op === "exists") {
    if (typeof value !== "boolean") throw fail(at, "exists takes true or false");
    return value;
  }
  if (op === "in" || op === "not_in") {
    if (!Array.isArray(value) || value.length === 0 || value.length > MAX_LIST) {
      throw fail(at, `${op} takes a non-empty array of at most ${MAX_LIST} values`);
    }
    return value.map((v, i) => scalar(type, v, `${at}[${i}]`));
  }
  return scalar(type, value, at);
}

function scalar(type: FieldType, value: unknown, at: string): unknown {
  const wrap = <T>(parse: () => T, hint: string): T => {
    try {
      return parse();
    } catch {
      throw fail(at, `expected ${hint}; got ${JSON.stringify(value)}`);
    }
  };
  switch (type) {
    case "string":
      if (typeof value !== "string" || value.length > 512) throw fail(at, "expected a string of at most 512 characters");
      return value;
    case "uuid":
      if (typeof value !== "string" || !isUuid(value)) throw fail(at, "expected a uuid");
      return value.toLowerCase();
    case "date":
      return wrap(() => parseDate(value), "a date YYYY-MM-DD");
    case "instant":
      return wrap(() => parseInstant(value), "an ISO 8601 instant, e.g. 2026-03-14T09:30:00Z");
    case "boolean":
      if (typeof value !== "boolean") throw fail(at, "expected true or false");
      return value;
    case "consent":
      if (typeof value !== "string" || !CONSENT_VALUES.includes(value)) throw fail(at, `expected one of ${CONSENT_VALUES.join(", ")}`);
      return value;
  }
}

function columnWhere(column: string, type: FieldType, op: string, value: unknown): Where {
  const text = type === "string" ? { mode: "insensitive" as const } : {};
  // Insensitive equals/contains/startsWith are ILIKE patterns: escape their wildcards.
  const literal = typeof value === "string" && type === "string" ? escapeLike(value) : value;
  switch (op) {
    case "eq":
      return { [column]: { equals: literal, ...text } };
    case "neq":
      return { NOT: { [column]: { equals: literal, ...text } } };
    case "in":
      return { [column]: { in: value, ...text } };
    case "not_in":
      return { NOT: { [column]: { in: value, ...text } } };
    case "contains":
      return { [column]: { contains: literal, mode: "insensitive" } };
    case "starts_with":
      return { [column]: { startsWith: literal, mode: "insensitive" } };
    case "exists":
      return value ? { [column]: { not: null } } : { [column]: null };
    default: // gt, gte, lt, lte
      return { [column]: { [op]: value } };
  }
}

/** Members whose e-mail has one of the wanted effective statuses (`unknown`: none observed). */
function consentWhere(leaf: ConsentLeaf, sets: ConsentSets): Where {
  const wanted = (statuses: string[]): Where => {
    const known = statuses.filter((s) => s !== "unknown") as ConsentStatus[];
    const contacts = known.flatMap((s) => sets[s]);
    const branches: Where[] = [{ email: { in: contacts, mode: "insensitive" } }];
    if (statuses.includes("unknown")) branches.push({ email: null }, { NOT: { email: { in: sets.observed, mode: "insensitive" } } });
    return { OR: branches };
  };
  const negate = leaf.op === "neq" || leaf.op === "not_in";
  const statuses = negate ? CONSENT_VALUES.filter((s) => !leaf.values.includes(s)) : leaf.values;
  return wanted(statuses);
}

/** Effective e-mail consent of every contact observed in the group for `purpose`, by status. */
export async function consentSets(dbGroup: PrismaClient, purpose: string): Promise<ConsentSets> {
  const rows = await dbGroup.consentObservation.groupBy({
    by: ["contactValue", "status"],
    where: { purpose, contactType: "email" },
    _max: { observedAt: true },
  });
  const byContact = new Map<string, { id: string; status: ConsentStatus; observedAt: Date }[]>();
  for (const r of rows) {
    const list = byContact.get(r.contactValue) ?? [];
    list.push({ id: "", status: r.status, observedAt: r._max.observedAt ?? new Date(0) });
    byContact.set(r.contactValue, list);
  }
  const sets: ConsentSets = { granted: [], withdrawn: [], denied: [], observed: [...byContact.keys()] };
  for (const [contact, observations] of byContact) {
    const status = effectiveConsent(observations).status;
    if (status !== "unknown") sets[status].push(contact);
  }
  return sets;
}

/** Validates a document and returns the Prisma where of its members (consent sets fetched once). */
export async function filterWhere(dbGroup: PrismaClient, memberType: MemberType, doc: unknown): Promise<Where> {
  const compiled = compileFilter(memberType, doc);
  const sets = new Map<string, ConsentSets>();
  for (const purpose of compiled.consentPurposes) sets.set(purpose, await consentSets(dbGroup, purpose));
  return compiled.build(sets);
}
