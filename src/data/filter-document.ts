// The filter document language of filter-defined tables and of table previews:
//
//   node  := { "and": [node, …] } | { "or": [node, …] } | { "not": node } | leaf
//   leaf  := { "field": <field>, "op": <operator>, "value": <value> }
//
// Fields depend on the member type (FIELDS below). `consent.<purpose>` is the effective consent of
// the member's e-mail for that purpose across the group (granted, withdrawn, denied or unknown),
// decided by the same precedence as everywhere else. Validation errors name the offending part by
// its path, e.g. `filter_doc.and[1].op`.
//
// A document renders to one SQL condition over the member table (alias `t`; data/sql.ts adds the
// caller's tenant predicate, data/tables.ts runs it). Consent leaves are EXISTS subqueries on
// consent_observations for the member's e-mail, so the statement has the same few bind parameters
// whatever the group size (inlining every observed contact would pass PostgreSQL's parameter limit).
import { clip, echo, invalidRequest } from "../errors";
import type { Scope } from "./scope";
import { isUuid, parseDate, parseInstant } from "../validate";
import { masterAtProperty, tenantSql } from "./tenant";
import { columns, empty, join, raw, sql, type Sql } from "./sql";
import { escapeLike } from "../db/like";
import { GuestProfile, MasterProfile, type FilterType, type Model } from "./models";

export type MemberType = "guest_profile" | "master_profile";
/** The table each member type is read from (data/models.ts). */
export const MEMBER_MODEL = { guest_profile: "GuestProfile", master_profile: "MasterProfile" } as const;
type FieldType = FilterType | "consent";

interface Field {
  type: FieldType;
  /** Field of the member table (data/models.ts maps it to its column), or the SQL of a relation-backed field. */
  column: string | ((scope: Scope, op: string, value: unknown) => Sql);
}

/** The columns a model's declaration lets a filter document test, by their filter name (data/models.ts). */
const declared = (model: Model): Record<string, Field> =>
  Object.fromEntries(model.filterable.map((f) => [f.name, { type: f.type, column: f.field }]));

export const FIELDS: Record<MemberType, Record<string, Field>> = {
  guest_profile: declared(GuestProfile),
  master_profile: {
    ...declared(MasterProfile),
    // A master profile is "at" a property when one of its guest profiles is there: the tenant rule's own condition.
    property_id: {
      type: "uuid",
      column: (scope, op, value) => {
        const ids = Array.isArray(value) ? value : [value];
        const some = masterAtProperty("t", sql`${scope.propertyGroupId}::uuid`, sql`= ANY(${ids}::uuid[])`);
        return op === "neq" || op === "not_in" ? sql`NOT ${some}` : some;
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

export type ConsentValue = "granted" | "withdrawn" | "denied" | "unknown";
const CONSENT_VALUES: ConsentValue[] = ["granted", "withdrawn", "denied", "unknown"];
const MAX_DEPTH = 8;
const MAX_LEAVES = 100;
const MAX_LIST = 500;

/** `record[key]` when key is the record's own: `constructor` or `__proto__` are not field names. */
const own = <T>(record: Record<string, T>, key: string): T | undefined => (Object.hasOwn(record, key) ? record[key] : undefined);

const fail = (path: string, message: string) => invalidRequest(`${path}: ${message}`);

/**
 * Validates a document and renders the condition selecting its members of `memberType`, over the
 * member table aliased `t`; consent is read across the caller's whole group (spec 1.5).
 */
export function filterSql(scope: Scope, memberType: MemberType, doc: unknown, path = "filter_doc"): Sql {
  const fields = own(FIELDS, memberType);
  if (!fields) throw invalidRequest(`member_type must be one of ${Object.keys(FIELDS).join(", ")}`);
  const group: Scope = { ...scope, propertyId: null };
  const col = columns(MEMBER_MODEL[memberType]);
  let leaves = 0;

  function node(value: unknown, at: string, depth: number): Sql {
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
      return sql`(${join(children, keys[0] === "and" ? " AND " : " OR ")})`;
    }
    if (keys.length === 1 && keys[0] === "not") return sql`(NOT ${node(obj.not, `${at}.not`, depth + 1)})`;
    return leaf(obj, at);
  }

  function leaf(obj: Record<string, unknown>, at: string): Sql {
    if (++leaves > MAX_LEAVES) throw fail(at, `more than ${MAX_LEAVES} conditions`);
    const unknownKeys = Object.keys(obj).filter((k) => !["field", "op", "value"].includes(k));
    if (unknownKeys.length) throw fail(at, `unknown member ${unknownKeys[0]}; a condition has field, op and value`);
    const name = obj.field;
    if (typeof name !== "string") throw fail(`${at}.field`, "expected a field name");
    const isConsent = /^consent\.[a-z][a-z0-9_]{0,63}$/.test(name);
    const field: Field | undefined = isConsent ? { type: "consent", column: "email" } : own(fields!, name);
    if (!field) {
      throw fail(`${at}.field`, `unknown field ${clip(name)} for ${memberType}; fields: ${Object.keys(fields!).join(", ")}, consent.<purpose>`);
    }
    const op = obj.op;
    const allowed = OPERATORS[field.type];
    if (typeof op !== "string" || !allowed.includes(op)) {
      throw fail(`${at}.op`, `${echo(op)} is not an operator for ${name}; use one of ${allowed.join(", ")}`);
    }
    const value = checkValue(field.type, op, obj.value, `${at}.value`);
    if (field.type === "consent") {
      const values = (Array.isArray(value) ? value : [value]) as ConsentValue[];
      const negate = op === "neq" || op === "not_in";
      return consentSql(group, col("email"), name.slice("consent.".length), CONSENT_VALUES.filter((s) => values.includes(s) !== negate));
    }
    if (typeof field.column === "function") return field.column(scope, op, value);
    return columnSql(col(field.column), field.type, op, value);
  }

  return node(doc, path, 1);
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
      throw fail(at, `expected ${hint}; got ${echo(value)}`);
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
      if (typeof value !== "string" || !(CONSENT_VALUES as string[]).includes(value)) throw fail(at, `expected one of ${CONSENT_VALUES.join(", ")}`);
      return value;
  }
}


const CASTS: Record<Exclude<FieldType, "string" | "consent">, Sql> = {
  uuid: sql`uuid`,
  date: sql`date`,
  instant: sql`timestamptz`,
  boolean: sql`boolean`,
};
const COMPARE: Record<string, Sql> = { eq: sql`=`, gt: sql`>`, gte: sql`>=`, lt: sql`<`, lte: sql`<=` };

/** Dates and instants travel as ISO text, cast in SQL like every other value. */
const param = (value: unknown): unknown =>
  value instanceof Date ? value.toISOString() : Array.isArray(value) ? value.map(param) : value;

function columnSql(c: Sql, type: Exclude<FieldType, "consent">, op: string, value: unknown): Sql {
  if (op === "exists") return value ? sql`${c} IS NOT NULL` : sql`${c} IS NULL`;
  // NOT keeps SQL's three-valued logic: a NULL column matches neither eq nor neq (as before, in Prisma).
  const not = (condition: Sql) => sql`NOT (${condition})`;
  if (type === "string") {
    // Case-insensitive: lower() on both sides (the lower(email) indexes serve eq); ILIKE patterns
    // escape their wildcards.
    switch (op) {
      case "eq":
        return sql`lower(${c}) = lower(${value})`;
      case "neq":
        return not(sql`lower(${c}) = lower(${value})`);
      case "in":
        return sql`lower(${c}) = ANY (SELECT lower(v) FROM unnest(${value}::text[]) v)`;
      case "not_in":
        return not(sql`lower(${c}) = ANY (SELECT lower(v) FROM unnest(${value}::text[]) v)`);
      case "contains":
        return sql`${c} ILIKE '%' || ${escapeLike(value as string)} || '%'`;
      default: // starts_with
        return sql`${c} ILIKE ${escapeLike(value as string)} || '%'`;
    }
  }
  const cast = CASTS[type];
  const v = type === "date" ? (param(value) as string).slice(0, 10) : param(value);
  switch (op) {
    case "in":
      return sql`${c} = ANY(${v}::${cast}[])`;
    case "not_in":
      return not(sql`${c} = ANY(${v}::${cast}[])`);
    case "neq":
      return not(sql`${c} = ${v}::${cast}`);
    default: // eq, gt, gte, lt, lte
      return sql`${c} ${COMPARE[op]} ${v}::${cast}`;
  }
}

/**
 * Members whose e-mail has one of `statuses` as its effective consent for `purpose`, decided in SQL
 * exactly as consent/precedence.ts decides it: any withdrawn or denied observation beats every
 * grant; among those, the latest decides (equal instants: the smaller id); a grant alone is
 * granted; no observation (or no e-mail) is unknown. Every condition is true or false, never NULL,
 * so NOT negates it exactly; three statuses are rendered as NOT the fourth, so a leaf costs at most
 * two subqueries. They follow the (property_group_id, contact_value, purpose) index per member, or
 * PostgreSQL hashes them once per statement when it expects many members.
 */
function consentSql(group: Scope, email: Sql, purpose: string, statuses: ConsentValue[]): Sql {
  return effectiveConsentSql(group, "email", email, purpose, statuses);
}

/**
 * consentSql for a contact column of either kind: an e-mail column (normalised here as observations
 * store it) or a phone column (guest profiles store E.164, as observations do). The aggregates
 * (data/metrics.ts) decide reachability with it, so they apply the same rule as table filters.
 */
export function effectiveConsentSql(group: Scope, contactType: "email" | "phone", contact: Sql, purpose: string, statuses: ConsentValue[]): Sql {
  if (statuses.length === 0) return sql`FALSE`;
  if (statuses.length === CONSENT_VALUES.length) return sql`TRUE`;
  if (statuses.length === 3) return sql`(NOT ${effectiveConsentSql(group, contactType, contact, purpose, CONSENT_VALUES.filter((s) => !statuses.includes(s)))})`;
  // Observations store the contact normalised (consent/precedence.ts normaliseContact: e-mail
  // trimmed, lower-case), so the member's e-mail is normalised the same way here.
  const email = contact;
  const value = contactType === "email" ? sql`lower(btrim(${contact}))` : contact;
  const mine = sql`${tenantSql("ConsentObservation", group, "co")} AND co.contact_type = ${raw(`'${contactType}'`)} AND co.purpose = ${purpose} AND co.contact_value = ${value}`;
  const observed = (status: Sql) => sql`EXISTS (SELECT 1 FROM consent_observations co WHERE ${mine}${status})`;
  const restrictive = observed(sql` AND co.status <> 'granted'`);
  const one: Record<ConsentValue, () => Sql> = {
    granted: () => sql`(${observed(sql` AND co.status = 'granted'`)} AND NOT ${restrictive})`,
    // The latest restrictive observation has this status.
    withdrawn: () => latestRestrictiveIs("withdrawn"),
    denied: () => latestRestrictiveIs("denied"),
    unknown: () => sql`(${email} IS NULL OR NOT ${observed(empty)})`,
  };
  const latestRestrictiveIs = (status: ConsentValue) =>
    sql`EXISTS (SELECT 1 FROM (SELECT co.status FROM consent_observations co WHERE ${mine} AND co.status <> 'granted'
      ORDER BY co.observed_at DESC, co.id LIMIT 1) latest WHERE latest.status = ${status}::"ConsentStatus")`;
  const has = (s: ConsentValue) => statuses.includes(s);
  if (has("withdrawn") && has("denied")) return restrictive;
  if (has("granted") && has("unknown")) return sql`(NOT ${restrictive})`;
  return sql`(${join(statuses.map((s) => one[s]()), " OR ")})`;
}

/**
 * A phone column as E.164 the way consent/precedence.ts toE164 reads it (the "(0)" trunk digit and
 * spaces, brackets, dots, dashes and slashes removed, a leading 00 as +), NULL when that is not
 * E.164 ("07700 900123": no country code), so a stored phone is decided in SQL as
 * check_contact_permission decides it.
 */
export function e164Sql(phone: Sql): Sql {
  // The patterns as parameters: no escaping rules of two languages to get right.
  const stripped = sql`regexp_replace(regexp_replace(regexp_replace(${phone}, ${"\\(0\\)"}::text, '', 'g'), ${"[[:space:]()./-]"}::text, '', 'g'), '^00', '+')`;
  return sql`(SELECT v FROM (SELECT ${stripped} AS v) x WHERE v ~ ${"^\\+[1-9][0-9]{6,14}$"}::text)`;
}

/**
 * The observation that decides the effective consent of one contact point for `purpose`, as a
 * subquery of one row (status, observed_at) for a LATERAL join; no row means unknown. The order is
 * consent/precedence.ts's: any withdrawn or denied observation first, then the latest, at equal
 * instants the smaller id; read across the caller's whole group (spec 1.5). `contactType` and
 * `value` are SQL of the outer row (the value already normalised, as observations store it).
 */
export function decidingObservationSql(scope: Scope, contactType: Sql, value: Sql, purpose: string): Sql {
  const group = { ...scope, propertyId: null };
  return sql`(SELECT co.status, co.observed_at FROM consent_observations co
    WHERE ${tenantSql("ConsentObservation", group, "co")} AND co.purpose = ${purpose} AND co.contact_type = ${contactType} AND co.contact_value = ${value}
    ORDER BY co.status = 'granted', co.observed_at DESC, co.id LIMIT 1)`;
}
