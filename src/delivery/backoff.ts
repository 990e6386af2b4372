// Exponential backoff with "equal jitter", shared by table delivery (engine.ts) and the webhook
// sender (src/webhooks/sender.ts): a random point in the upper half of base · factor^failures
// (capped), so failing receivers of many tenants do not all retry in the same second. A longer
// Retry-After wins (it is the other side's word, not jittered), up to the cap.
export interface BackoffCurve {
  baseMs: number;
  capMs: number;
  /** Growth per failure; default 2. */
  factor?: number;
}

export function jitteredBackoffMs(curve: BackoffCurve, previousFailures: number, retryAfterMs = 0, random: () => number = Math.random): number {
  const { baseMs, capMs, factor = 2 } = curve;
  const exp = Math.min(baseMs * factor ** Math.min(previousFailures, 20), capMs);
  const jittered = Math.round(exp / 2 + (exp / 2) * random());
  return Math.max(jittered, Math.min(retryAfterMs, capMs));
}
