// Whose rows a request may read: the property group, and the one property a narrowed caller sees.
// Every tenant predicate (data/tenant.ts) is built from it; src/auth resolves it from the credential.
export interface Scope {
  propertyGroupId: string;
  /** Narrowed to one property (pinned key or X-Property-Id), else the whole group. */
  propertyId: string | null;
}
