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

const DAY_MS = 86_400_000;

/**
 * A date given where an instant is asked (issue 42: dates and timestamps alike): that day's UTC
 * midnight, remembering it was a whole day, so that an exclusive range end takes the whole day in
 * (rangeEnd). Its JSON is the date, so a cursor bound to the filter tells it from the instant.
 */
export class WholeDay extends Date {
  override toJSON(): string {
    return this.toISOString().slice(0, 10);
  }
}

/** Where an instant is asked: an instant, or a date as its UTC midnight (a WholeDay); undefined otherwise. */
export function instantOrDayOf(value: unknown): Date | undefined {
  const day = dateOf(value);
  return day ? new WholeDay(day.getTime()) : instantOf(value);
}

/**
 * Where a date is asked: a date, or the date an instant is written in, in its own offset (the
 * client's local date: 2026-03-14T00:00:00+01:00 is 14 March, not the UTC 13th); undefined otherwise.
 */
export function dayOf(value: unknown): Date | undefined {
  return dateOf(value) ?? (instantOf(value) ? dateOf((value as string).slice(0, 10)) : undefined);
}

/**
 * The exclusive end of an instant range (`_to`) as a plain Date: a whole day given as the end counts
 * in full (the range stops at the next day's start); null after the last storable day (no bound).
 */
export function rangeEnd(to: Date): Date | null {
  if (!(to instanceof WholeDay)) return to;
  const next = new Date(to.getTime() + DAY_MS);
  return inStorableYears(next) ? next : null;
}

/** A range's start as a plain Date (a WholeDay is its midnight). */
export const rangeStart = (from: Date): Date => new Date(from.getTime());

export const INSTANT_OR_DAY_HINT = `an ISO 8601 instant (e.g. 2026-03-14T09:30:00Z) or a date YYYY-MM-DD (its start, UTC; as a _to bound, the whole day) ${YEARS_HINT}`;
export const DAY_OR_INSTANT_HINT = `a real calendar date YYYY-MM-DD (or an ISO 8601 instant: the date it is written in) ${YEARS_HINT}`;

export function parseInstantOrDay(value: unknown): Date {
  const date = instantOrDayOf(value);
  if (!date) throw invalidRequest(`expected ${INSTANT_OR_DAY_HINT}; got ${JSON.stringify(value)}`);
  return date;
}

export function parseDay(value: unknown): Date {
  const date = dayOf(value);
  if (!date) throw invalidRequest(`expected ${DAY_OR_INSTANT_HINT}; got ${JSON.stringify(value)}`);
  return date;
}
