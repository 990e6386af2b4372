// Prisma turns case-insensitive `equals`, `contains` and `startsWith` into ILIKE without escaping
// the pattern, so a value of "%" would match every row. Every such filter escapes its value here.
export function escapeLike(value: string): string {
  return value.replace(/[\\%_]/g, "\\$&");
}
