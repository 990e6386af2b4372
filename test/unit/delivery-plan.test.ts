// Batch planning: change collapsing, consent precedence, de-duplication by address; backoff.
import { backoffMs } from "../../src/delivery/engine";
import { collapseChanges, normaliseCounts, planBatch, type Change, type Contact } from "../../src/delivery/plan";
import type { Observation } from "../../src/consent/precedence";

const ch = (seq: number, memberId: string, op: "add" | "remove"): Change => ({ seq: BigInt(seq), memberId, op });
const contact = (email: string): Contact => ({ email, givenName: null, familyName: null });
const obs = (status: Observation["status"], day: number): Observation => ({ id: `${status}${day}`, status, observedAt: new Date(Date.UTC(2024, 0, day)) });

describe("collapseChanges", () => {
  it("keeps each member's last op, ordered by that last change", () => {
    const out = collapseChanges([ch(1, "a", "add"), ch(2, "b", "add"), ch(3, "a", "remove"), ch(4, "c", "remove"), ch(5, "c", "add")]);
    expect(out).toEqual([ch(2, "b", "add"), ch(3, "a", "remove"), ch(5, "c", "add")]);
  });

  it("add, remove, add is an add; remove, add, remove is a remove", () => {
    expect(collapseChanges([ch(1, "a", "add"), ch(2, "a", "remove"), ch(3, "a", "add")])).toEqual([ch(3, "a", "add")]);
    expect(collapseChanges([ch(1, "a", "remove"), ch(2, "a", "add"), ch(3, "a", "remove")])).toEqual([ch(3, "a", "remove")]);
  });

  it("is empty for no changes", () => {
    expect(collapseChanges([])).toEqual([]);
  });
});

describe("planBatch", () => {
  const contacts = new Map([
    ["granted", contact("g@x.org")],
    ["withdrawn", contact("w@x.org")],
    ["denied", contact("d@x.org")],
    ["unknown", contact("u@x.org")],
    ["twin", contact("g@x.org")],
  ]);
  const observations = new Map<string, Observation[]>([
    ["g@x.org", [obs("granted", 1)]],
    // Withdrawn beats granted whatever the order they were seen in.
    ["w@x.org", [obs("withdrawn", 1), obs("granted", 9)]],
    ["d@x.org", [obs("granted", 1), obs("denied", 2)]],
  ]);
  const plan = (changes: Change[], retained: string[] = []) =>
    planBatch({ changes, contacts, observations, retainedEmails: new Set(retained) });

  it("subscribes only effective granted; counts suppressed, no-consent and unresolved members", () => {
    const p = plan([ch(1, "granted", "add"), ch(2, "withdrawn", "add"), ch(3, "denied", "add"), ch(4, "unknown", "add"), ch(5, "ghost", "add")]);
    expect(p.subscribe).toEqual([contact("g@x.org")]);
    expect(p.remove).toEqual([]);
    expect(p.counts).toMatchObject({ skipped_suppressed: 2, skipped_no_consent_subscribe: 1, skipped_unresolved: 1 });
  });

  it("removes whatever the consent, but not an unresolved member", () => {
    const p = plan([ch(1, "withdrawn", "remove"), ch(2, "unknown", "remove"), ch(3, "ghost", "remove")]);
    expect(p.remove).toEqual(["w@x.org", "u@x.org"]);
    expect(p.counts.skipped_unresolved).toBe(1);
  });

  it("sends one subscribe per address and never removes an address another member keeps", () => {
    expect(plan([ch(1, "granted", "add"), ch(2, "twin", "add")]).subscribe).toEqual([contact("g@x.org")]);
    expect(plan([ch(1, "granted", "add"), ch(2, "twin", "remove")]).remove).toEqual([]);
    expect(plan([ch(1, "twin", "remove")], ["g@x.org"]).remove).toEqual([]);
    expect(plan([ch(1, "twin", "remove")]).remove).toEqual(["g@x.org"]);
  });

  it("gives each address sent the log position of the last change behind it, and none to addresses not sent", () => {
    const p = plan([ch(1, "granted", "add"), ch(2, "unknown", "add"), ch(3, "withdrawn", "remove"), ch(4, "twin", "add"), ch(5, "ghost", "add")]);
    expect(Object.fromEntries(p.seqByEmail)).toEqual({ "g@x.org": 4n, "w@x.org": 3n });
  });

  it("plans an add then remove of one member as a removal only", () => {
    const p = plan([ch(1, "granted", "add"), ch(2, "granted", "remove")]);
    expect(p.subscribe).toEqual([]);
    expect(p.remove).toEqual(["g@x.org"]);
  });
});

describe("normaliseCounts", () => {
  it("fills every counter with an integer", () => {
    expect(normaliseCounts(null)).toEqual({
      pushed: 0, subscribed: 0, skipped_no_consent_subscribe: 0, skipped_suppressed: 0, skipped_unresolved: 0, removed: 0, failed: 0,
    });
    expect(normaliseCounts({ pushed: 3, subscribed: "2", failed: 1.7, extra: 9 })).toMatchObject({ pushed: 3, subscribed: 2, failed: 1 });
  });
});

describe("backoffMs", () => {
  const top = () => 1 - Number.EPSILON;
  it("doubles from 5 s, caps at 15 min, and honours a longer Retry-After", () => {
    expect([0, 1, 2, 3].map((n) => backoffMs(n, 0, top))).toEqual([5_000, 10_000, 20_000, 40_000]);
    expect(backoffMs(12, 0, top)).toBe(15 * 60_000);
    expect(backoffMs(100, 0, top)).toBe(15 * 60_000);
    expect(backoffMs(0, 60_000)).toBe(60_000);
    expect(backoffMs(3, 1_000, top)).toBe(40_000);
  });

  it("jitters within the upper half of each step, so failed bindings do not retry in step", () => {
    expect([0, 1, 2, 3].map((n) => backoffMs(n, 0, () => 0))).toEqual([2_500, 5_000, 10_000, 20_000]);
    const draws = Array.from({ length: 200 }, () => backoffMs(2));
    expect(Math.min(...draws)).toBeGreaterThanOrEqual(10_000);
    expect(Math.max(...draws)).toBeLessThanOrEqual(20_000);
    expect(new Set(draws).size).toBeGreaterThan(50);
  });
});
