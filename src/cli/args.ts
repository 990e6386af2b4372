// Argument checks for the gcs command: each names the argument and the problem. A UsageError exits
// with code 2 (cli/main.ts); anything else a command throws exits with code 1.

import { ALL_SCOPES } from "../auth/scopes";

export class UsageError extends Error {}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A commander argument parser: the value if it is a uuid. */
export function uuid(name: string): (value: string) => string {
  return (value) => {
    if (!UUID.test(value)) throw new UsageError(`${name} must be a uuid`);
    return value;
  };
}

/** A commander argument parser: an integer ≥ min. */
export function integer(name: string, min: number): (value: string) => number {
  return (value) => atLeast(value, name, min);
}

/** A commander argument parser: an integer from min to max. */
export function integerBetween(name: string, min: number, max: number): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (value.trim() === "" || !Number.isSafeInteger(n) || n < min || n > max) throw new UsageError(`${name} must be an integer from ${min} to ${max}`);
    return n;
  };
}

export function atLeast(value: string, name: string, min: number): number {
  const n = Number(value);
  if (value.trim() === "" || !Number.isSafeInteger(n) || n < min) throw new UsageError(`${name} must be an integer ≥ ${min}`);
  return n;
}

/** `read:guests, read:reservations` → ["read:guests", "read:reservations"]; an unknown scope is a usage error (exit 2). */
export function scopeList(value: string): string[] {
  const scopes = value.split(",").map((s) => s.trim()).filter(Boolean);
  if (scopes.length === 0) throw new UsageError("--scopes needs at least one scope, comma-separated");
  const unknown = scopes.filter((s) => !ALL_SCOPES.includes(s));
  if (unknown.length > 0) throw new UsageError(`--scopes: unknown scope(s): ${unknown.join(", ")}; known: ${ALL_SCOPES.join(" ")}`);
  return scopes;
}

export function nonEmpty(name: string): (value: string) => string {
  return (value) => {
    if (!value.trim()) throw new UsageError(`${name} must not be empty`);
    return value;
  };
}
