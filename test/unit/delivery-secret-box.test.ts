import { open, seal, SecretBoxError } from "../../src/delivery/secret-box";

describe("secret box", () => {
  it("opens what it sealed, with the same passphrase only", () => {
    const sealed = seal("key-us21", "passphrase one");
    expect(sealed).toMatch(/^v1:aes256gcm:/);
    expect(sealed).not.toContain("key-us21");
    expect(open(sealed, "passphrase one")).toBe("key-us21");
    expect(seal("key-us21", "passphrase one")).not.toBe(sealed); // fresh IV each time
    expect(() => open(sealed, "passphrase two")).toThrow(SecretBoxError);
  });

  it("refuses altered and foreign values", () => {
    const sealed = seal("secret", "p");
    const raw = Buffer.from(sealed.slice("v1:aes256gcm:".length), "base64");
    raw[raw.length - 1] ^= 1;
    expect(() => open(`v1:aes256gcm:${raw.toString("base64")}`, "p")).toThrow(SecretBoxError);
    expect(() => open("v1:fixture:c2VjcmV0", "p")).toThrow(SecretBoxError);
    expect(() => open("v1:aes256gcm:AAAA", "p")).toThrow(SecretBoxError);
  });
});
