// Pure parsers for query-string and path parameters. Each rejects bad input with a 400 whose detail
// names the parameter and shows a valid example. Range rules (limit bounds, clamping) are business
// rules and live in the resolvers; here only the type is checked.
import { buildASTSchema, isEnumType, parse } from "graphql";
import { dateOf, instantOf, isUuid, parseDay } from "../validate";
import { loadTypeDefs } from "../graphql/schema-source";
import { echo, invalidRequest, notFound } from "../errors";
import { isStorableText, unstorableDetail, unstorablePath } from "../graphql/text";

export interface ParamSpec {
  /** Where the value goes in the operation's variables, e.g. "limit" or "filter.sourceId". */
  variable: string;
  parse: (raw: string, name: string) => unknown;
  /** The value's JSON Schema, for the OpenAPI description (enum values resolved lazily). */
  schema: () => Record<string, unknown>;
  /** Also taken as `name[]=a&name[]=b` (a list), read as `name=a,b`. */
  list?: boolean;
  /** A query parameter the route cannot answer without (path parameters always are). */
  required?: boolean;
  /** With `required`: the value the 400 shows. */
  example?: string;
}

/** The same parameter, required: a request without it is a 400 showing `example`. */
export const requiredParam = (spec: ParamSpec, example: string): ParamSpec => ({ ...spec, required: true, example });

const ISO_INSTANT_HINT = "2026-03-14T09:30:00Z";

/** The two forms a range bound takes (issue 42), the one the bound keeps first. */
const INSTANT_FORM = { type: "string", format: "date-time" };
const DATE_FORM = { type: "string", format: "date" };

/** @param bounds documented bounds; the resolver enforces them (they are business rules). */
export const int = (variable: string, bounds: { minimum?: number; maximum?: number } = {}): ParamSpec => ({
  variable,
  schema: () => ({ type: "integer", ...bounds }),
  parse: (raw, name) => {
    if (!/^-?\d{1,9}$/.test(raw)) throw invalidRequest(`${name} must be an integer, e.g. ${name}=50; got ${echo(raw)}`);
    return Number(raw);
  },
});

export const str = (variable: string): ParamSpec => ({
  variable,
  schema: () => ({ type: "string", minLength: 1, maxLength: 512 }),
  parse: (raw, name) => {
    if (raw.length === 0 || raw.length > 512) throw invalidRequest(`${name} must be a non-empty string of at most 512 characters`);
    if (!isStorableText(raw)) throw invalidRequest(unstorableDetail(name));
    return raw;
  },
});

export const uuid = (variable: string): ParamSpec => ({
  variable,
  schema: () => ({ type: "string", format: "uuid" }),
  parse: (raw, name) => {
    if (!isUuid(raw)) throw invalidRequest(`${name} must be a uuid, e.g. ${name}=3f1c2a9e-7d4b-4c1a-9e2f-5b6a7c8d9e0f; got ${echo(raw)}`);
    return raw.toLowerCase();
  },
});

/** A path id where a non-uuid means "no such record" (404), as an unknown id does: webhook endpoints. */
export const uuidOrNotFound = (variable: string, noun: string): ParamSpec => ({
  variable,
  schema: () => ({ type: "string", format: "uuid" }),
  parse: (raw) => {
    if (!isUuid(raw)) throw notFound(noun, echo(raw));
    return raw.toLowerCase();
  },
});

/**
 * A point in time: an ISO 8601 instant, or a date YYYY-MM-DD (issue 42), passed on as the date for the
 * DateTime scalar to read as that day's UTC midnight, and as a whole day when it ends a range (`_to`).
 */
export const instant = (variable: string): ParamSpec => ({
  variable,
  schema: () => ({ anyOf: [INSTANT_FORM, DATE_FORM] }),
  parse: (raw, name) => {
    const at = instantOf(raw);
    if (at) return at.toISOString();
    if (dateOf(raw)) return raw;
    throw invalidRequest(`${name} must be an ISO 8601 instant with time zone or a date YYYY-MM-DD in the years 0001 to 9999, e.g. ${name}=${ISO_INSTANT_HINT} or ${name}=2026-03-14; got ${echo(raw)}`);
  },
});

/** A calendar date YYYY-MM-DD; an ISO 8601 instant is accepted too and means the date it is written in (issue 42). */
export const date = (variable: string): ParamSpec => ({
  variable,
  schema: () => ({ anyOf: [DATE_FORM, INSTANT_FORM] }),
  parse: (raw, name) => {
    try {
      return parseDay(raw).toISOString().slice(0, 10);
    } catch {
      throw invalidRequest(`${name} must be a date YYYY-MM-DD (or an ISO 8601 instant, read as the date it is written in) in the years 0001 to 9999, e.g. ${name}=2026-03-14; got ${echo(raw)}`);
    }
  },
});

export const bool = (variable: string): ParamSpec => ({
  variable,
  schema: () => ({ type: "string", enum: ["true", "false", "1", "0"] }),
  parse: (raw, name) => {
    if (raw === "true" || raw === "1") return true;
    if (raw === "false" || raw === "0") return false;
    throw invalidRequest(`${name} must be true, false, 1 or 0; got ${echo(raw)}`);
  },
});

export const oneOf = (variable: string, values: readonly string[]): ParamSpec => ({
  variable,
  schema: () => ({ type: "string", enum: [...values] }),
  parse: (raw, name) => {
    if (!values.includes(raw)) throw invalidRequest(`${name} must be one of ${values.join(", ")}; got ${echo(raw)}`);
    return raw;
  },
});

/**
 * Stripe's `expand` on a list: a comma-separated list of the relations each row may carry (also
 * `expand[]=guest`). One relation today, `guest`: it sets the operation's `$expandGuest`, which the
 * row's `guest @include(if: $expandGuest)` reads. Described as an array sent comma-separated
 * (OpenAPI's form style without explode).
 */
export const expand = (relation: "guest"): ParamSpec => ({
  variable: "expandGuest",
  schema: () => ({ type: "array", items: { type: "string", enum: [relation] } }),
  list: true,
  parse: (raw, name) => {
    const unknown = raw.split(",").map((v) => v.trim()).find((v) => v !== relation);
    if (unknown !== undefined) throw invalidRequest(`${name} must be a comma-separated list of ${relation}; got ${echo(unknown)}`);
    return true;
  },
});

/** An enum of schema.graphql taken in lower case (order=desc → DESC), as REST spells its values. */
export const lowerEnumOf = (variable: string, enumName: string): ParamSpec => {
  const values = () => schemaEnumValues(enumName).map((v) => v.toLowerCase());
  return {
    variable,
    schema: () => ({ type: "string", enum: values() }),
    parse: (raw, name) => String(oneOf(variable, values()).parse(raw, name)).toUpperCase(),
  };
};

let enums: Map<string, string[]> | undefined;

/** The values of an enum of schema.graphql, so REST and GraphQL accept exactly the same ones. */
export function schemaEnumValues(name: string): string[] {
  if (!enums) {
    const schema = buildASTSchema(parse(loadTypeDefs()));
    enums = new Map();
    for (const type of Object.values(schema.getTypeMap())) {
      if (isEnumType(type)) enums.set(type.name, type.getValues().map((v) => v.name));
    }
  }
  const values = enums.get(name);
  if (!values) throw new Error(`schema.graphql has no enum ${name}`);
  return values;
}

export const enumOf = (variable: string, enumName: string): ParamSpec => {
  let values: string[] | undefined;
  return {
    variable,
    parse: (raw, name) => oneOf(variable, (values ??= schemaEnumValues(enumName))).parse(raw, name),
    schema: () => ({ type: "string", enum: (values ??= schemaEnumValues(enumName)) }),
  };
};

/** A JSON body member: the value as sent, checked by `parse`. */
export interface BodySpec {
  variable: string;
  required?: boolean;
  parse: (value: unknown, name: string) => unknown;
  schema: () => Record<string, unknown>;
}

/** Any JSON; its meaning is checked where it is used (a filter document: data/filter-document.ts). */
export const jsonValue = (variable: string, required = false): BodySpec => ({
  variable,
  required,
  parse: (value, name) => {
    const at = unstorablePath(value, name);
    if (at !== undefined) throw invalidRequest(unstorableDetail(at));
    return value;
  },
  schema: () => ({ type: "object" }),
});

/** A parameter's schema where it travels as JSON (a body member, an MCP argument): booleans as themselves. */
export function asJsonValue(schema: Record<string, unknown>): Record<string, unknown> {
  return Array.isArray(schema.enum) && schema.enum.toString() === "true,false,1,0" ? { type: "boolean" } : schema;
}

/** A body member given as the query-string parser expects (number or string, checked the same way). */
export const bodyParam = (spec: ParamSpec, required = false): BodySpec => ({
  variable: spec.variable,
  required,
  schema: () => asJsonValue(spec.schema()),
  parse: (value, name) => {
    // Not JSON.stringify: an array nested 5,000 deep would overflow the stack in it (a 500).
    if (typeof value === "object") throw invalidRequest(`${name} must be a string, number or boolean, not an object or array`);
    return spec.parse(String(value), name);
  },
});

/** A string body member; `detail` is the 400's text when it is not one (and, without `tooLong`, when it is too long). */
export const text = (variable: string, detail: string, opts: { required?: boolean; maxLength: number; tooLong?: string }): BodySpec => ({
  variable,
  required: opts.required,
  schema: () => ({ type: "string", maxLength: opts.maxLength }),
  parse: (value, name) => {
    if (typeof value !== "string") throw invalidRequest(detail);
    if (value.length > opts.maxLength) throw invalidRequest(opts.tooLong ?? detail);
    if (!isStorableText(value)) throw invalidRequest(unstorableDetail(name));
    return value;
  },
});

/** An array of strings (of uuids with `uuids`), at most 100; `detail` is the 400's text otherwise. */
export const stringList = (variable: string, detail: string, opts: { required?: boolean; uuids?: boolean } = {}): BodySpec => ({
  variable,
  required: opts.required,
  schema: () => ({ type: "array", maxItems: 100, items: opts.uuids ? { type: "string", format: "uuid" } : { type: "string" } }),
  parse: (value, name) => {
    if (!Array.isArray(value) || value.length > 100 || !value.every((v) => typeof v === "string" && (!opts.uuids || isUuid(v)))) {
      throw invalidRequest(detail);
    }
    if (!value.every((v) => isStorableText(v))) throw invalidRequest(unstorableDetail(name));
    return value;
  },
});

export function parseBody(body: unknown, specs: Record<string, BodySpec>): Record<string, unknown> {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw invalidRequest(`the body must be a JSON object with ${Object.keys(specs).join(", ")}`);
  }
  const variables: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(specs)) {
    const value = own(body as Record<string, unknown>, name);
    if (value === undefined || value === null) {
      if (spec.required) throw invalidRequest(`${name} is required in the body`);
      continue;
    }
    setPath(variables, spec.variable, spec.parse(value, name));
  }
  for (const name of Object.keys(body)) {
    if (!own(specs, name)) throw invalidRequest(unknownParameterDetail(name, Object.keys(specs)).replace("query parameter", "body member"));
  }
  return variables;
}

/**
 * Query string → variables. Unknown parameters are rejected (a silently ignored `after` would make
 * a client re-read page one forever), with the closest known name as a hint.
 */
export function parseQuery(query: Record<string, unknown>, specs: Record<string, ParamSpec>): Record<string, unknown> {
  const variables: Record<string, unknown> = {};
  for (const [given, value] of Object.entries(query)) {
    // `expand[]=guest` (repeatable) is `expand=guest`, for the specs that take lists.
    const listed = given.endsWith("[]") ? own(specs, given.slice(0, -2)) : undefined;
    const [name, spec] = listed?.list ? [given.slice(0, -2), listed] : [given, own(specs, given)];
    const raw = listed?.list && Array.isArray(value) && value.every((v) => typeof v === "string") ? value.join(",") : value;
    if (!spec) throw invalidRequest(unknownParameterDetail(name, Object.keys(specs)));
    if (typeof raw !== "string") throw invalidRequest(`${name} must be given once, as a plain value`);
    setPath(variables, spec.variable, spec.parse(raw, name));
  }
  for (const [name, spec] of Object.entries(specs)) {
    if (spec.required && own(query, name) === undefined) throw invalidRequest(`${name} is required, e.g. ${name}=${spec.example}`);
  }
  return variables;
}

export function parsePath(params: Record<string, string>, specs: Record<string, ParamSpec>): Record<string, unknown> {
  const variables: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(specs)) setPath(variables, spec.variable, spec.parse(own(params, name) ?? "", name));
  return variables;
}

/** @param noun what the caller sent: a query parameter (REST) or an argument (an MCP tool). */
export function unknownParameterDetail(name: string, known: string[], noun = "query parameter"): string {
  const suggestion = closest(name, known);
  const hint = suggestion ? `; did you mean ${suggestion}?` : ".";
  const list = known.length ? ` Accepted: ${known.join(", ")}.` : ` This ${noun === "argument" ? "tool" : "route"} takes no ${noun}s.`;
  return `unknown ${noun} ${name}${hint}${list}`;
}

const ALIASES: Record<string, string> = { after: "cursor", page_token: "cursor", next: "cursor", per_page: "limit", page_size: "limit", size: "limit" };

/** The known name nearest to `name`, when one is near enough to be what was meant. */
export function closest(name: string, known: string[]): string | undefined {
  const alias = own(ALIASES, name);
  if (alias && known.includes(alias)) return alias;
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of known) {
    const d = editDistance(name.toLowerCase(), candidate);
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  return best !== undefined && bestDistance <= Math.max(2, Math.floor(best.length / 3)) ? best : undefined;
}

function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = row;
  }
  return prev[b.length];
}

/**
 * A record's own member, never one inherited from Object.prototype: user input names keys (query
 * parameters, body members), and `specs["constructor"]` must mean "no such parameter".
 */
export function own<T>(record: Record<string, T>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}

/** Paths come from the route table, never from input; still, none may write through a prototype. */
function setPath(target: Record<string, unknown>, path: string, value: unknown) {
  const keys = path.split(".");
  if (keys.some((key) => key === "__proto__" || key === "constructor" || key === "prototype")) {
    throw new Error(`route table: variable path ${path} names a prototype member`);
  }
  let node = target;
  for (const key of keys.slice(0, -1)) node = (own(node, key) ?? (node[key] = {})) as Record<string, unknown>;
  node[keys[keys.length - 1]] = value;
}
