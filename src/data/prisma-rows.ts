// Rows read through Prisma carry Date objects; rows read in SQL carry the API's ISO text. A model
// read both ways (reservations and transactions: Prisma for the filtered lists, SQL for nested
// pages) is handed out in one form, the SQL one, so code above data/ never asks which it got.
import type { RowShape } from "./sql";

const datedFields = new WeakMap<RowShape, [string, "instant" | "date"][]>();

/** The row with each instant and date of `shape` as ISO text (dates YYYY-MM-DD), like data/sql.ts renders them. */
export function asApiRow<Row>(shape: RowShape, row: object): Row {
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
