// The scope vocabulary: `read:<area>` and `write:<area>`. Routes and GraphQL fields name the scope
// they require with @requiresScope; a credential holds a set of these.
export const READ_SCOPES = [
  "read:properties",
  "read:guests",
  "read:reservations",
  "read:transactions",
  "read:consents",
  "read:actions",
  "read:events",
  "read:reviews",
  "read:loyalty",
  "read:resources",
  "read:tables",
] as const;

export const WRITE_SCOPES = ["write:tables"] as const;

/** Webhook endpoints (issue 29): a receiver's URL and secret are an administrator's business. */
export const WEBHOOK_SCOPES = ["read:webhooks", "write:webhooks"] as const;

export const ALL_SCOPES: readonly string[] = [...READ_SCOPES, ...WRITE_SCOPES, ...WEBHOOK_SCOPES];

/** Session roles of the web app and the scopes each one carries. */
export const ROLE_SCOPES: Record<string, readonly string[]> = {
  owner: ALL_SCOPES,
  admin: ALL_SCOPES,
  member: [...READ_SCOPES, ...WRITE_SCOPES],
  viewer: READ_SCOPES,
};

export function validateScopes(scopes: readonly string[]): string[] {
  const unknown = scopes.filter((s) => !ALL_SCOPES.includes(s));
  if (unknown.length > 0) throw new Error(`unknown scope(s): ${unknown.join(", ")}; known: ${ALL_SCOPES.join(" ")}`);
  return [...new Set(scopes)];
}
