// Opaque, tamper-evident keyset cursors. The token carries only the sort key of the last row; the
// HMAC also covers the list family, the caller's property group and the query's filters, so a
// cursor replayed by another group, on another list or with other filters is `invalid_cursor`.
import { createHmac, timingSafeEqual } from "node:crypto";
import { invalidCursor } from "../errors";

export type CursorKey = readonly (string | number)[];

export interface CursorBinding {
  /** The list the cursor walks, e.g. "guests". */
  family: string;
  propertyGroupId: string;
  /** Everything that shapes the result set besides the position: filters, narrowed property. */
  query: unknown;
}

const MAC_BYTES = 16;

export function encodeCursor(key: CursorKey, binding: CursorBinding, secret: string): string {
  const payload = Buffer.from(JSON.stringify(key)).toString("base64url");
  return `${payload}.${mac(payload, binding, secret).toString("base64url")}`;
}

export function decodeCursor(token: string, binding: CursorBinding, secret: string): CursorKey {
  const dot = token.indexOf(".");
  if (dot <= 0 || token.length > 1024) throw invalidCursor();
  const payload = token.slice(0, dot);
  // Compare the encoded text, not decoded bytes: base64 ignores some trailing bits, so two texts
  // can decode to the same bytes and a changed character would go unnoticed.
  const given = Buffer.from(token.slice(dot + 1));
  const expected = Buffer.from(mac(payload, binding, secret).toString("base64url"));
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw invalidCursor();
  try {
    const key: unknown = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
    if (Array.isArray(key) && key.every((k) => typeof k === "string" || typeof k === "number")) return key;
  } catch {
    // fall through: a valid MAC over a bad payload means our own bug, still not the caller's 500
  }
  throw invalidCursor();
}

function mac(payload: string, binding: CursorBinding, secret: string): Buffer {
  return createHmac("sha256", secret)
    .update(`${binding.family}\n${binding.propertyGroupId}\n${canonicalJson(binding.query)}\n${payload}`)
    .digest()
    .subarray(0, MAC_BYTES);
}

/** JSON with object keys sorted and undefined/null members dropped, so equal queries hash equally. */
export function canonicalJson(value: unknown): string {
  if (value === null || value === undefined) return "null";
  if (value instanceof Date) return JSON.stringify(value.toISOString());
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined && v !== null)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}
