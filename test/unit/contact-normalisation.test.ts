// consent/precedence.ts normaliseContact: the one normalisation every consent reader applies
// (consent resolvers, guest context, table filters, the delivery engine) before looking a contact up.
import { normaliseContact } from "../../src/consent/precedence";
import { contactValueOf } from "../../src/data/consents";

describe("normaliseContact", () => {
  it("trims and lower-cases e-mail addresses; an empty one is no contact", () => {
    expect(normaliseContact("email", "  Olivia.Smith@Example.COM\t")).toBe("olivia.smith@example.com");
    expect(normaliseContact("email", "   ")).toBeNull();
  });

  it("writes phones as E.164 whatever their formatting", () => {
    expect(normaliseContact("phone", "+44 (0)7700-900.123")).toBe("+447700900123");
    expect(normaliseContact("phone", "0044 7700 900123")).toBe("+447700900123");
    expect(normaliseContact("phone", "+1 (415) 555-0100")).toBe("+14155550100");
  });

  it("gives no contact for a phone without its country code or that is not a number", () => {
    expect(normaliseContact("phone", "07700 900123")).toBeNull();
    expect(normaliseContact("phone", "call me")).toBeNull();
  });
});

// data/consents.ts contactValueOf: a contact value of unknown type, as every door's consent lookup sends it.
describe("contactValueOf", () => {
  it("reads a value with an @ as an e-mail and anything else as a phone when it is one", () => {
    expect(contactValueOf("  Olivia.Smith@Example.COM ")).toBe("olivia.smith@example.com");
    for (const phone of ["+44 20 7946 0958", "+44-20-7946-0958", "+442079460958", "0044 (0)20 7946 0958"]) expect(contactValueOf(phone)).toBe("+442079460958");
  });

  it("keeps other text trimmed and lower-cased, so it finds nothing stored", () => {
    expect(contactValueOf(" 07700 900123 ")).toBe("07700 900123");
    expect(contactValueOf("Nobody")).toBe("nobody");
  });
});
