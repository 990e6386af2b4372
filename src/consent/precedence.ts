// Consent precedence (spec 1.5): rows store decisive signals only. The effective status of a contact
// and purpose within a property group is the most restrictive among its observations: withdrawn or
// denied beats granted, whatever the order they were seen in. No observation means unknown, which
// is never eligible.
export type ConsentStatus = "granted" | "withdrawn" | "denied";
export type EffectiveStatus = ConsentStatus | "unknown";

export interface Observation {
  id: string;
  status: ConsentStatus;
  observedAt: Date;
}

export interface EffectiveConsent {
  status: EffectiveStatus;
  /** The observation that decides the status: the latest of the most restrictive ones. */
  decidedBy: Observation | null;
  observationCount: number;
  lastObservedAt: Date | null;
}

/**
 * Later observation first; at the same instant the smaller id, so the outcome never depends on the
 * order rows arrive in (a withdrawal and a denial can share an instant). Table filters decide the
 * same way in SQL (data/filter-document.ts: ORDER BY observed_at DESC, id).
 */
const supersedes = (o: Observation, than: Observation | null) =>
  !than || o.observedAt > than.observedAt || (o.observedAt.getTime() === than.observedAt.getTime() && o.id < than.id);

export function effectiveConsent(observations: readonly Observation[]): EffectiveConsent {
  let decisive: Observation | null = null;
  let restrictive: Observation | null = null;
  let last: Date | null = null;
  for (const o of observations) {
    if (!last || o.observedAt > last) last = o.observedAt;
    if (o.status !== "granted") {
      if (supersedes(o, restrictive)) restrictive = o;
    } else if (supersedes(o, decisive)) {
      decisive = o;
    }
  }
  const decidedBy = restrictive ?? decisive;
  return {
    status: decidedBy ? decidedBy.status : "unknown",
    decidedBy,
    observationCount: observations.length,
    lastObservedAt: last,
  };
}

/** Only an effective `granted` makes a contact eligible for the purpose. */
export const isEligible = (c: EffectiveConsent) => c.status === "granted";

export type ContactType = "email" | "phone";

/**
 * A contact point as consent observations store it, the one normalisation every reader of consent
 * applies before looking it up: e-mail trimmed and lower-case, phone as E.164. Null when there is
 * nothing to look up (an empty address, a phone without its country code).
 */
export function normaliseContact(type: ContactType, value: string): string | null {
  if (type === "phone") return toE164(value);
  const email = value.trim().toLowerCase();
  return email === "" ? null : email;
}

/**
 * A phone number in any formatting as E.164 ("+44 (0)7700-900.123", "0044 7700 900123" →
 * "+447700900123"); null when it carries no country code ("07700 900123": the country cannot be
 * guessed) or is not a phone number. Consent observations and guest profiles store E.164.
 */
export function toE164(raw: string): string | null {
  // "(0)" is the trunk digit some write after the country code; then only digits and a leading "+".
  let s = raw.replace(/\(0\)/g, "").replace(/[\s().\-/]/g, "");
  if (s.startsWith("00")) s = `+${s.slice(2)}`;
  return /^\+[1-9]\d{6,14}$/.test(s) ? s : null;
}
