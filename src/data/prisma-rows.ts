// Rows read through Prisma carry Date objects; rows read in SQL carry the API's ISO text. data/
// hands out every row in the SQL form, so code above it never asks which way a row was read (and
// the scalars and cursor keys need no second case).
import type { RowShape } from "./models";

/** `T` with its Date members as ISO text. */
export type AsText<T> = { [K in keyof T]: T[K] extends Date ? string : T[K] extends Date | null ? string | null : T[K] };

/**
 * The row with every Date member as ISO instant text. For models whose only Date members are
 * timestamps; a model with calendar dates (@db.Date) goes through `datesAsText` with its shape.
 */
export function instantsAsText<T extends object>(row: T): AsText<T>;
export function instantsAsText<T extends object>(row: T | null): AsText<T> | null;
export function instantsAsText<T extends object>(row: T | null): AsText<T> | null {
  if (row === null) return null;
  const out: Record<string, unknown> = { ...(row as Record<string, unknown>) };
  for (const key in out) {
    const value = out[key];
    if (value instanceof Date) out[key] = value.toISOString();
  }
  return out as AsText<T>;
}

export const allInstantsAsText = <T extends object>(rows: T[]) => rows.map((row) => instantsAsText(row));

const datedFields = new WeakMap<RowShape, [string, "instant" | "date"][]>();

/** The row with each instant and date of `shape` as ISO text (dates YYYY-MM-DD), as data/sql.ts renders them. */
export function datesAsText<Row>(shape: RowShape, row: object): Row {
  let dated = datedFields.get(shape);
  if (!dated) {
    dated = Object.entries(shape).filter((e): e is [string, "instant" | "date"] => e[1] !== "value");
    datedFields.set(shape, dated);
  }
  const out: Record<string, unknown> = { ...row };
  for (const [field, kind] of dated) {
    const value = out[field];
    if (value instanceof Date) out[field] = kind === "date" ? value.toISOString().slice(0, 10) : value.toISOString();
  }
  return out as Row;
}
