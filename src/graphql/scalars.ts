// Custom scalars. Input parsing rejects bad values with `invalid_request` and an example.
import { GraphQLScalarType, Kind, type ValueNode } from "graphql";
import { isUuid } from "../auth/scope";
import { invalidRequest } from "./errors";

const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;
const ISO_DATE = /^\d{4}-\d{2}-\d{2}$/;

function stringLiteral(ast: ValueNode): unknown {
  return ast.kind === Kind.STRING ? ast.value : undefined;
}

/** True when YYYY-MM-DD at the start of `value` names a real calendar day (no 30 February). */
function isCalendarDay(value: string): boolean {
  const day = new Date(`${value.slice(0, 10)}T00:00:00Z`);
  return !Number.isNaN(day.getTime()) && day.toISOString().slice(0, 10) === value.slice(0, 10);
}

/**
 * PostgreSQL has no year 0 (ISO 0000 is 1 BC, which it writes "0001 BC") and our ISO text has four
 * year digits, so instants and dates are kept to the years 1 to 9999 in UTC. An offset can push a
 * valid-looking local time out of range ("0001-01-01T00:00:00+01:00" is in year 0).
 */
const inStorableYears = (date: Date) => date.getUTCFullYear() >= 1 && date.getUTCFullYear() <= 9999;
const YEARS_HINT = "between the years 0001 and 9999";

export function parseInstant(value: unknown): Date {
  const valid = typeof value === "string" && ISO_INSTANT.test(value) && isCalendarDay(value);
  const date = valid ? new Date(value as string) : undefined;
  if (!date || Number.isNaN(date.getTime()) || !inStorableYears(date)) {
    throw invalidRequest(`expected an ISO 8601 instant with time zone ${YEARS_HINT}, e.g. 2026-03-14T09:30:00Z; got ${JSON.stringify(value)}`);
  }
  return date;
}

export function parseDate(value: unknown): Date {
  const date = typeof value === "string" && ISO_DATE.test(value) && isCalendarDay(value) ? new Date(`${value}T00:00:00Z`) : undefined;
  if (!date || !inStorableYears(date)) {
    throw invalidRequest(`expected a date YYYY-MM-DD ${YEARS_HINT}, e.g. 2026-03-14; got ${JSON.stringify(value)}`);
  }
  return date;
}

function parseUuid(value: unknown): string {
  if (typeof value !== "string" || !isUuid(value)) {
    throw invalidRequest(`expected a uuid, e.g. 3f1c2a9e-7d4b-4c1a-9e2f-5b6a7c8d9e0f; got ${JSON.stringify(value)}`);
  }
  return value.toLowerCase();
}

// Rows read in SQL carry instants and dates already rendered as the API's ISO text
// (db/scoped-sql.ts): those pass through as they are.
export const DateTime = new GraphQLScalarType<Date, string>({
  name: "DateTime",
  serialize: (value) => (typeof value === "string" ? value : (value as Date).toISOString()),
  parseValue: parseInstant,
  parseLiteral: (ast) => parseInstant(stringLiteral(ast)),
});

export const DateScalar = new GraphQLScalarType<Date, string>({
  name: "Date",
  serialize: (value) => (typeof value === "string" ? value : (value as Date).toISOString().slice(0, 10)),
  parseValue: parseDate,
  parseLiteral: (ast) => parseDate(stringLiteral(ast)),
});

export const UUID = new GraphQLScalarType<string, string>({
  name: "UUID",
  serialize: (value) => String(value),
  parseValue: parseUuid,
  parseLiteral: (ast) => parseUuid(stringLiteral(ast)),
});

export const JSONScalar = new GraphQLScalarType({
  name: "JSON",
  serialize: (value) => value,
  parseValue: (value) => value,
  parseLiteral: function literal(ast): unknown {
    switch (ast.kind) {
      case Kind.STRING:
      case Kind.BOOLEAN:
        return ast.value;
      case Kind.INT:
      case Kind.FLOAT:
        return Number(ast.value);
      case Kind.NULL:
        return null;
      case Kind.LIST:
        return ast.values.map(literal);
      case Kind.OBJECT:
        return Object.fromEntries(ast.fields.map((f) => [f.name.value, literal(f.value)]));
      default:
        throw invalidRequest("JSON literals cannot contain variables");
    }
  },
});

/** 64-bit integers from bigint columns; JSON numbers are exact up to 2^53, far above any amount. */
function parseLong(value: unknown): bigint {
  if (typeof value === "number" && Number.isSafeInteger(value)) return BigInt(value);
  if (typeof value === "string" && /^-?\d{1,18}$/.test(value)) return BigInt(value);
  throw invalidRequest(`expected a 64-bit integer; got ${JSON.stringify(value)}`);
}

export const Long = new GraphQLScalarType<bigint, number>({
  name: "Long",
  serialize: (value) => Number(value as bigint | number),
  parseValue: parseLong,
  parseLiteral: (ast) => parseLong(ast.kind === Kind.INT || ast.kind === Kind.STRING ? ast.value : undefined),
});
