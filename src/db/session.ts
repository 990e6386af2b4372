// Whose rows the statements of the current async flow may touch: the second tenant wall (Row Level
// Security, docs/security.md). The data layer runs every scoped read and write "in" the caller's
// group; the few paths that must cross groups say so, with their reason, by running "across groups".
// db/tenant-pool.ts sends the matching role and group with each statement, in the same round trip.
// A statement run in neither (a missing wrapper, a new raw query) runs as the tenant role with no
// group, and every table that holds a group's data answers it with no rows.
import { AsyncLocalStorage } from "node:async_hooks";

/** Every path that may read or write several groups' rows; each is listed, with why, in docs/security.md. */
export const CROSS_GROUP_PATHS = {
  "credential lookup": "finds which group a key, token or partner credential belongs to, before any group is known",
  "delivery worker": "claims due destination bindings of every group and records their progress",
  "webhook worker": "claims due webhook endpoints of every group, reads their events and records attempts",
  "rate-limit counters": "shares each credential's request counts between instances",
  OAuth: "registers clients, issues and exchanges codes and tokens before or across a group's session",
  "rollup refresher": "finds the (group, aggregate) pairs with changes and rebuilds their rollups",
  "service start": "reads or creates the service's own secrets and registers configured static tokens",
  CLI: "operator commands (fixtures, keys, partners, connectors, secrets, events, deliver) act on the group they name, or on all",
  metrics: "the /metrics gauges count delivery and webhook backlogs over all groups",
} as const;
export type CrossGroupPath = keyof typeof CROSS_GROUP_PATHS;

export type Session = { readonly groupId: string } | { readonly crossGroup: CrossGroupPath };

const current = new AsyncLocalStorage<Session>();

/** Runs `fn` with its statements limited, in PostgreSQL too, to the rows of `groupId`. */
export function asGroup<T>(groupId: string, fn: () => T): T {
  const session = current.getStore();
  // Already there (a nested read of the same request): no new context.
  if (session && "groupId" in session && session.groupId === groupId) return fn();
  return current.run({ groupId }, () => started(fn()));
}

/** Runs `fn` on the documented cross-group path `path` (PostgreSQL role gcs_system). */
export function acrossGroups<T>(path: CrossGroupPath, fn: () => T): T {
  return current.run({ crossGroup: path }, () => started(fn()));
}

/**
 * A Prisma query is a lazy thenable: it runs when first awaited, in the async context of whoever
 * awaits it. Started here (then() called inside the session), it runs in this one. It is then a
 * plain Promise: such a query can no longer go into an array $transaction.
 */
function started<T>(value: T): T {
  if (value instanceof Promise || typeof (value as { then?: unknown } | null)?.then !== "function") return value;
  return (value as unknown as PromiseLike<unknown>).then() as T;
}

export const currentSession = (): Session | undefined => current.getStore();

/** Runs `fn` in `session` (one currentSession() returned earlier), or in none. */
export function inSession<T>(session: Session | undefined, fn: () => T): T {
  return session === current.getStore() ? fn() : session ? current.run(session, fn) : current.exit(fn);
}
