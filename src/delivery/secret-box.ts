// Destination connection secrets at rest: AES-256-GCM under a key derived from the service's
// passphrase. GCM authenticates, so a ciphertext sealed under another passphrase (or a fixture's
// placeholder) fails to open instead of yielding garbage that would be sent as an API key.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";

const PREFIX = "v1:aes256gcm:";
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** The 32-byte AES key of a passphrase. */
export function deriveKey(passphrase: string): Buffer {
  if (!passphrase) throw new Error("secret-box: empty passphrase");
  return createHash("sha256").update(passphrase, "utf8").digest();
}

/** `v1:aes256gcm:` + base64(iv ‖ tag ‖ ciphertext). */
export function seal(plaintext: string, passphrase: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv("aes-256-gcm", deriveKey(passphrase), iv);
  const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
  return PREFIX + Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64");
}

export class SecretBoxError extends Error {}

/** The plaintext, or SecretBoxError when the value is not ours, was altered, or the key differs. */
export function open(ciphertext: string, passphrase: string): string {
  if (!ciphertext.startsWith(PREFIX)) throw new SecretBoxError("not a sealed secret");
  const raw = Buffer.from(ciphertext.slice(PREFIX.length), "base64");
  if (raw.length < IV_BYTES + TAG_BYTES) throw new SecretBoxError("sealed secret too short");
  const decipher = createDecipheriv("aes-256-gcm", deriveKey(passphrase), raw.subarray(0, IV_BYTES));
  decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  try {
    return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString("utf8");
  } catch {
    throw new SecretBoxError("sealed secret does not open with this key");
  }
}
