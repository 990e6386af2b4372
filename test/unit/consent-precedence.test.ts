import { effectiveConsent, isEligible, normaliseContact, type Observation } from "../../src/consent/precedence";

const at = (day: number) => new Date(Date.UTC(2026, 0, day));
const obs = (id: string, status: Observation["status"], day: number): Observation => ({ id, status, observedAt: at(day) });

describe("consent precedence", () => {
  it("no observation is unknown, never eligible", () => {
    const c = effectiveConsent([]);
    expect(c).toEqual({ status: "unknown", decidedBy: null, observationCount: 0, lastObservedAt: null });
    expect(isEligible(c)).toBe(false);
  });

  it("withdrawn or denied beat granted, whichever came last", () => {
    for (const order of [[obs("g", "granted", 1), obs("w", "withdrawn", 2)], [obs("w", "withdrawn", 1), obs("g", "granted", 2)]]) {
      const c = effectiveConsent(order);
      expect(c.status).toBe("withdrawn");
      expect(c.decidedBy!.id).toBe("w");
      expect(isEligible(c)).toBe(false);
    }
    expect(effectiveConsent([obs("g", "granted", 5), obs("d", "denied", 1)]).status).toBe("denied");
  });

  it("the latest restrictive observation decides between withdrawn and denied", () => {
    expect(effectiveConsent([obs("d", "denied", 1), obs("w", "withdrawn", 3), obs("g", "granted", 9)]).decidedBy!.id).toBe("w");
  });

  it("a withdrawal and a denial at the same instant: the smaller id decides, whatever the order", () => {
    const tie = [obs("b-denied", "denied", 2), obs("a-withdrawn", "withdrawn", 2), obs("g", "granted", 3)];
    for (const order of [tie, [...tie].reverse(), [tie[1], tie[2], tie[0]]]) {
      expect(effectiveConsent(order).decidedBy!.id).toBe("a-withdrawn");
    }
  });

  it("grants only: granted, decided by the latest grant, eligible", () => {
    const c = effectiveConsent([obs("a", "granted", 1), obs("b", "granted", 4)]);
    expect(c).toMatchObject({ status: "granted", observationCount: 2, lastObservedAt: at(4) });
    expect(c.decidedBy!.id).toBe("b");
    expect(isEligible(c)).toBe(true);
  });

  it("normalises contact points", () => {
    expect(normaliseContact("email", "  Olivia.Smith@Example.COM ")).toBe("olivia.smith@example.com");
    expect(normaliseContact("phone", "+44 (7700) 900-123")).toBe("+447700900123");
  });
});
