import { createCipheriv, createHash, randomBytes } from "node:crypto";
import { deriveKey, kidOfSealed, loadKeyring, open, rawKeyOf, seal, SecretBoxError } from "../../src/delivery/secret-box";

const CONN = "3f1c0a52-5d1e-4c8e-9a43-0b7d2f6e9a10";
const OTHER_CONN = "8a2b4c6d-1e3f-4a5b-8c7d-9e0f1a2b3c4d";
const SALT = "deployment-salt-for-tests";
const RAW = Buffer.alloc(32, 7);

/** A v1 ciphertext as the old box made it: key SHA-256(passphrase), no associated data. */
function sealV1(plaintext: string, passphrase: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", createHash("sha256").update(passphrase).digest(), iv);
  const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
  return "v1:aes256gcm:" + Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64");
}

/** The ciphertext with one byte of its base64 body flipped at `index` (negative: from the end). */
function flip(sealed: string, index: number): string {
  const cut = sealed.lastIndexOf(":") + 1;
  const raw = Buffer.from(sealed.slice(cut), "base64");
  raw[(index + raw.length) % raw.length] ^= 1;
  return sealed.slice(0, cut) + raw.toString("base64");
}

describe("secret box v2", () => {
  it("passphrase (scrypt): opens what it sealed, for the same connection only", async () => {
    const ring = await loadKeyring({ current: "passphrase number one", salt: SALT });
    const sealed = seal("key-us21", CONN, ring);
    expect(sealed).toMatch(new RegExp(`^v2:${ring.current.kid}:[A-Za-z0-9+/=]+$`));
    expect(ring.current.kid).toMatch(/^[0-9a-f]{8}$/);
    expect(sealed).not.toContain("key-us21");
    expect(open(sealed, CONN, ring)).toBe("key-us21");
    expect(seal("key-us21", CONN, ring)).not.toBe(sealed); // fresh IV each time
    // Associated data: the same ciphertext on another connection row does not open.
    expect(() => open(sealed, OTHER_CONN, ring)).toThrow(SecretBoxError);
  });

  it("a passphrase's key depends on the deployment salt; a raw key's does not", async () => {
    const [a, b] = await Promise.all([deriveKey("passphrase number one", SALT), deriveKey("passphrase number one", "another deployment")]);
    expect(a.kid).not.toBe(b.kid);
    expect(a.key.equals(b.key)).toBe(false);
    const sealed = seal("x", CONN, { current: a, keys: [a] });
    expect(() => open(sealed, CONN, { current: b, keys: [b] })).toThrow(/not configured/);

    const fromBase64 = await deriveKey(`base64:${RAW.toString("base64")}`, SALT);
    const fromHex = await deriveKey(RAW.toString("hex"), "another deployment");
    expect(fromHex.kid).toBe(fromBase64.kid);
    expect(fromHex.key.equals(fromBase64.key)).toBe(true);
    // HKDF, not the raw key itself nor its SHA-256.
    expect(fromHex.key.equals(RAW)).toBe(false);
    expect(fromHex.key.equals(createHash("sha256").update(RAW).digest())).toBe(false);
  });

  it("accepts raw keys as base64: (32 bytes) or 64 hex chars; anything else is a passphrase; refuses malformed base64: keys", async () => {
    expect(rawKeyOf(`base64:${RAW.toString("base64")}`)).toEqual(RAW);
    expect(rawKeyOf(RAW.toString("hex").toUpperCase())).toEqual(RAW);
    expect(rawKeyOf("a passphrase of some length")).toBeNull();
    expect(rawKeyOf(RAW.toString("hex").slice(1))).toBeNull(); // 63 hex chars: a passphrase
    expect(() => rawKeyOf(`base64:${Buffer.alloc(16).toString("base64")}`)).toThrow(SecretBoxError);
    expect(() => rawKeyOf("base64:not base64!")).toThrow(SecretBoxError);
    await expect(deriveKey("", SALT)).rejects.toThrow(SecretBoxError);
    await expect(deriveKey("passphrase number one", "")).rejects.toThrow(SecretBoxError);
  });

  it("derives each key once per process (scrypt is slow by design)", async () => {
    const text = `a passphrase derived once ${Math.random()}`;
    const t0 = performance.now();
    const first = await deriveKey(text, SALT);
    const t1 = performance.now();
    const again = await deriveKey(text, SALT);
    const t2 = performance.now();
    expect(again).toBe(first);
    expect(t1 - t0).toBeGreaterThan(10); // a real scrypt
    expect(t2 - t1).toBeLessThan((t1 - t0) / 10);
  });

  it("the current key seals; previous keys open by kid; an unknown kid names itself, never a key", async () => {
    const old = await loadKeyring({ current: "the old passphrase", salt: SALT });
    const rotated = await loadKeyring({ current: RAW.toString("hex"), previous: ["the old passphrase"], salt: SALT });
    const sealedOld = seal("old secret", CONN, old);
    expect(kidOfSealed(sealedOld)).toBe(old.current.kid);
    expect(open(sealedOld, CONN, rotated)).toBe("old secret");
    const sealedNew = seal("new secret", CONN, rotated);
    expect(kidOfSealed(sealedNew)).toBe(rotated.current.kid);
    expect(kidOfSealed(sealedNew)).not.toBe(old.current.kid);
    expect(open(sealedNew, CONN, rotated)).toBe("new secret");

    const newOnly = await loadKeyring({ current: RAW.toString("hex"), salt: SALT });
    const err = (() => {
      try {
        open(sealedOld, CONN, newOnly);
      } catch (e) {
        return e as Error;
      }
    })();
    expect(err).toBeInstanceOf(SecretBoxError);
    expect(err!.message).toBe(`sealed under key ${old.current.kid}, which is not configured`);
    expect(err!.message).not.toContain("the old passphrase");
  });

  it("opens v1 ciphertexts with a current or previous key until rotated", async () => {
    const v1 = sealV1("legacy-key-us1", "the old passphrase");
    expect(kidOfSealed(v1)).toBeNull();
    expect(open(v1, CONN, await loadKeyring({ current: "the old passphrase", salt: SALT }))).toBe("legacy-key-us1");
    expect(open(v1, OTHER_CONN, await loadKeyring({ current: "another passphrase!", previous: ["the old passphrase"], salt: SALT }))).toBe("legacy-key-us1");
    const unrelated = await loadKeyring({ current: "another passphrase!", salt: SALT });
    expect(() => open(v1, CONN, unrelated)).toThrow(/v1 secret does not open/);
  });

  it("refuses altered, truncated and foreign values", async () => {
    const ring = await loadKeyring({ current: `base64:${RAW.toString("base64")}`, salt: SALT });
    const sealed = seal("secret", CONN, ring);
    for (const index of [0, 12, 27, -1]) expect(() => open(flip(sealed, index), CONN, ring)).toThrow(SecretBoxError); // iv, tag, body
    const otherKid = sealed.replace(/^v2:[0-9a-f]{8}:/, "v2:00000000:");
    expect(() => open(otherKid, CONN, ring)).toThrow(/not configured/);
    expect(() => open(flip(sealV1("s", "x".repeat(16)), -1), CONN, ring)).toThrow(SecretBoxError);
    expect(() => open("v1:fixture:c2VjcmV0", CONN, ring)).toThrow(SecretBoxError);
    expect(() => open("v1:aes256gcm:AAAA", CONN, ring)).toThrow(SecretBoxError);
    expect(() => open(`v2:${ring.current.kid}:AAAA`, CONN, ring)).toThrow(SecretBoxError);
    expect(() => open("v2:xyz:AAAA", CONN, ring)).toThrow(SecretBoxError);
    expect(() => open("", CONN, ring)).toThrow(SecretBoxError);
  });
});
