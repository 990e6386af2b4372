// Non-blocking advice on a binding (spec 2.2 `guidance`): a table is a working list, not a consent
// record, so we recommend filtering it on granted email-marketing consent. Delivery never depends
// on this; the engine applies consent precedence per contact anyway.

export const CONSENT_FILTER_FIELD = "consent.email_marketing";

export interface BindingGuidance {
  recommends_consent_filter: boolean;
  consent_filter_field: typeof CONSENT_FILTER_FIELD;
  consent_filter_present: boolean;
}

type Node = Record<string, unknown>;
const isNode = (v: unknown): v is Node => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * True when every row the filter admits must have granted consent: a leaf
 * `{ field: "consent.email_marketing", op: "eq", value: "granted" }` reachable through `and` nodes
 * only. Under `or` another branch could admit rows without it; under `not` it is inverted.
 */
export function consentFilterPresent(filterDoc: unknown): boolean {
  if (!isNode(filterDoc)) return false;
  if (Array.isArray(filterDoc.and)) return filterDoc.and.some(consentFilterPresent);
  return filterDoc.field === CONSENT_FILTER_FIELD && filterDoc.op === "eq" && filterDoc.value === "granted";
}

/** Curated tables have no filter document: the filter is absent, so it is recommended. */
export function guidanceFor(filterDoc: unknown): BindingGuidance {
  const present = consentFilterPresent(filterDoc);
  return { recommends_consent_filter: !present, consent_filter_field: CONSENT_FILTER_FIELD, consent_filter_present: present };
}
