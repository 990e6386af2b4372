/** The fixture template every test database is cloned from. */
export const TEMPLATE_DB = "gcs_template";

export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}
