// Destination connection secrets at rest: AES-256-GCM, each ciphertext bound to its connection.
//
//   v2:<kid>:base64(iv ‖ tag ‖ ciphertext)     associated data: the connection id
//
// - The key comes from configured text (GCS_DELIVERY_SECRET_KEY) in one of two forms:
//     a raw 32-byte key, `base64:<44 base64 chars>` or 64 hex chars → HKDF-SHA256 (it is already
//       uniformly random; HKDF only separates this use from any other);
//     anything else is a passphrase → scrypt (N=2^15, r=8, p=1) with the deployment's salt.
//   The salt is per deployment, not per secret: one derivation per key per process (scrypt is slow
//   on purpose, ~0.1 s) opens every secret, and a per-deployment salt still defeats tables
//   precomputed for all deployments. It is not secret and lives in the database beside the
//   ciphertexts it belongs to (run.ts).
// - kid is a short fingerprint of the derived key (never the key), so a keyring of several keys
//   knows which one opens a ciphertext: the current key seals, previous keys only open, and
//   `gcs secrets rotate` re-seals everything under the current one.
// - The connection id as associated data: a ciphertext copied onto another connection row does not
//   open there.
// - GCM authenticates: a value sealed under another key, altered, or a fixture placeholder fails
//   to open instead of yielding garbage that would be sent as an API key.
//
// v1 (`v1:aes256gcm:`, key = SHA-256 of the text, no associated data) still opens with any
// configured key until rotated; nothing seals v1 any more.
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes, scrypt } from "node:crypto";

const V1_PREFIX = "v1:aes256gcm:";
const V2 = "v2";
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;
const HKDF_INFO = "gcs delivery secret box v2";
// 32 MiB of memory per derivation; maxmem must exceed 128·N·r.
const SCRYPT = { N: 2 ** 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 } as const;

export class SecretBoxError extends Error {}

/** One configured key, derived. */
export interface BoxKey {
  /** 8 hex chars identifying the derived key in ciphertexts. */
  kid: string;
  key: Buffer;
  /** The v1 key of the same text, for reading v1 ciphertexts. */
  v1Key: Buffer;
}

/** The current key (seals and opens) and previous ones (open only). */
export interface Keyring {
  current: BoxKey;
  /** current first, then the previous keys in the order configured. */
  keys: BoxKey[];
}

export interface KeyringSpec {
  current: string;
  previous?: string[];
  /** The deployment's salt for passphrase keys (any non-empty text). */
  salt: string;
}

/** The raw key of a `base64:` or 64-hex text; null for a passphrase. Throws for a malformed base64 key. */
export function rawKeyOf(text: string): Buffer | null {
  if (text.startsWith("base64:")) {
    const raw = Buffer.from(text.slice("base64:".length), "base64");
    if (raw.length !== KEY_BYTES || raw.toString("base64") !== text.slice("base64:".length)) {
      throw new SecretBoxError("a base64: key must be exactly 32 bytes in standard base64");
    }
    return raw;
  }
  return /^[0-9a-fA-F]{64}$/.test(text) ? Buffer.from(text, "hex") : null;
}

// Derivations by (salt, text) digest, so a process derives each key once; the map holds no key text.
const derived = new Map<string, Promise<BoxKey>>();

/** The derived key of a configured text; cached for the life of the process. */
export function deriveKey(text: string, salt: string): Promise<BoxKey> {
  if (!text) return Promise.reject(new SecretBoxError("empty key"));
  if (!salt) return Promise.reject(new SecretBoxError("empty salt"));
  const raw = rawKeyOf(text);
  // A raw key's derivation does not use the salt: the same key has the same kid everywhere.
  const id = createHash("sha256").update(raw ? "raw" : `scrypt\0${salt}`).update("\0").update(text).digest("base64");
  let key = derived.get(id);
  if (!key) {
    key = (raw ? Promise.resolve(Buffer.from(hkdfSync("sha256", raw, Buffer.alloc(0), HKDF_INFO, KEY_BYTES))) : scryptKey(text, salt)).then(
      (k) => ({ kid: kidOf(k), key: k, v1Key: createHash("sha256").update(text, "utf8").digest() }),
    );
    derived.set(id, key);
    key.catch(() => derived.delete(id));
  }
  return key;
}

export async function loadKeyring(spec: KeyringSpec): Promise<Keyring> {
  const keys = await Promise.all([spec.current, ...(spec.previous ?? [])].map((text) => deriveKey(text, spec.salt)));
  return { current: keys[0], keys };
}

function scryptKey(passphrase: string, salt: string): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(passphrase.normalize("NFC"), salt, KEY_BYTES, SCRYPT, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

const kidOf = (key: Buffer) => createHash("sha256").update("gcs secret box key id\0").update(key).digest("hex").slice(0, 8);

/** Seals under the ring's current key, bound to the connection. */
export function seal(plaintext: string, connectionId: string, ring: Keyring): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv("aes-256-gcm", ring.current.key, iv);
  cipher.setAAD(Buffer.from(connectionId, "utf8"));
  const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
  return `${V2}:${ring.current.kid}:${Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64")}`;
}

/** The plaintext, or SecretBoxError when the value is not ours, was altered or moved, or no configured key opens it. */
export function open(ciphertext: string, connectionId: string, ring: Keyring): string {
  if (ciphertext.startsWith(V1_PREFIX)) {
    const raw = unpack(ciphertext.slice(V1_PREFIX.length));
    for (const k of ring.keys) {
      const plain = decrypt(k.v1Key, raw, null);
      if (plain !== null) return plain;
    }
    throw new SecretBoxError("v1 secret does not open with any configured key");
  }
  const kid = kidOfSealed(ciphertext);
  if (!kid) throw new SecretBoxError("not a sealed secret");
  const keys = ring.keys.filter((k) => k.kid === kid);
  if (keys.length === 0) throw new SecretBoxError(`sealed under key ${kid}, which is not configured`);
  const raw = unpack(ciphertext.slice(V2.length + kid.length + 2));
  for (const k of keys) {
    const plain = decrypt(k.key, raw, Buffer.from(connectionId, "utf8"));
    if (plain !== null) return plain;
  }
  throw new SecretBoxError(`sealed secret does not open with key ${kid} for this connection`);
}

/** The kid of a v2 ciphertext; null for anything else (v1, placeholders). */
export function kidOfSealed(ciphertext: string): string | null {
  return /^v2:([0-9a-f]{8}):/.exec(ciphertext)?.[1] ?? null;
}

function unpack(body: string): Buffer {
  const raw = Buffer.from(body, "base64");
  if (raw.length < IV_BYTES + TAG_BYTES) throw new SecretBoxError("sealed secret too short");
  return raw;
}

/** The plaintext, or null when the tag does not verify (wrong key, altered, other connection). */
function decrypt(key: Buffer, raw: Buffer, aad: Buffer | null): string | null {
  const decipher = createDecipheriv("aes-256-gcm", key, raw.subarray(0, IV_BYTES));
  decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  if (aad) decipher.setAAD(aad);
  try {
    return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString("utf8");
  } catch {
    return null;
  }
}
