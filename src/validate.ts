// Small input checks shared by every layer (auth headers, REST parameters, GraphQL scalars, cursors,
// table filters), so none of them has to import another layer for them. Bad input is `invalid_request`
// with an example.
import { invalidRequest } from "./errors";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (value: string) => UUID.test(value);

// Hours 00-23 (JavaScript would read T24:00 as the next day), an offset of at most 23:59.
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T([01]\d|2[0-3]):[0-5]\d(:[0-5]\d(\.\d{1,9})?)?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$/;
const ISO_DATE = /^\d{4}-\d{2}-\d{2}$/;

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
export const INSTANT_HINT = `an ISO 8601 instant with time zone ${YEARS_HINT}, e.g. 2026-03-14T09:30:00Z`;
export const DATE_HINT = `a real calendar date YYYY-MM-DD ${YEARS_HINT}, e.g. 2026-03-14`;

/**
 * The one reader of instants and dates, for every door (REST parameters, GraphQL scalars, filter
 * documents, MCP tools, the CLI): an impossible day (2026-02-30), hour or offset is refused, never
 * rolled over, and so is an instant outside the storable years. undefined when `value` is not one.
 */
export function instantOf(value: unknown): Date | undefined {
  if (typeof value !== "string" || !ISO_INSTANT.test(value) || !isCalendarDay(value)) return undefined;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) || !inStorableYears(date) ? undefined : date;
}

/** The UTC midnight of a YYYY-MM-DD calendar date (see instantOf), or undefined. */
export function dateOf(value: unknown): Date | undefined {
  if (typeof value !== "string" || !ISO_DATE.test(value) || !isCalendarDay(value)) return undefined;
  const date = new Date(`${value}T00:00:00Z`);
  return inStorableYears(date) ? date : undefined;
}

export function parseInstant(value: unknown): Date {
  const date = instantOf(value);
  if (!date) throw invalidRequest(`expected ${INSTANT_HINT}; got ${JSON.stringify(value)}`);
  return date;
}

export function parseDate(value: unknown): Date {
  const date = dateOf(value);
  if (!date) throw invalidRequest(`expected ${DATE_HINT}; got ${JSON.stringify(value)}`);
  return date;
}
