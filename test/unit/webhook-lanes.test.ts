// Issue 40: each group's share of an instance's webhook lanes (src/webhooks/sender.ts LaneShares):
// one group's receivers, however many hang, always leave lanes for the next group; and so do
// several groups' (the reserve is for groups holding no lane, one lane each).
import { LaneShares } from "../../src/webhooks/sender";
import type { GroupRoom } from "../../src/data/stores/webhook-sender";

/**
 * What one claim (store.claimDueEndpoints) gives the groups that want lanes, `due` endpoints each,
 * by its rules: each lane-less group's first lane before anything else; then turns across groups,
 * each within its room, and all claims beyond first lanes within `room.beyondFirst`; `free` in all.
 * Every claimed lane is held (its receiver hangs): the shares take it.
 */
function claim(shares: LaneShares, lanes: { held: number }, total: number, due: Record<string, number>): Record<string, number> {
  const free = total - lanes.held;
  const room: GroupRoom = shares.room(free);
  const roomOf = (g: string) => (room.groups.includes(g) ? room.left[room.groups.indexOf(g)] : room.share);
  const got: Record<string, number> = {};
  let left = free;
  let beyond = room.beyondFirst;
  const groups = Object.keys(due);
  for (const g of groups) {
    if (left > 0 && !room.groups.includes(g) && due[g] > 0 && roomOf(g) > 0) {
      got[g] = 1;
      left--;
    }
  }
  // Then in turns (a group's turn-th due endpoint), a lane-less group's first one already given.
  for (let turn = 1; turn <= Math.max(...groups.map((g) => due[g])); turn++) {
    for (const g of groups) {
      const n = got[g] ?? 0;
      if (n >= turn || turn > due[g] || turn > roomOf(g) || left === 0 || beyond === 0) continue;
      got[g] = n + 1;
      left--;
      beyond--;
    }
  }
  for (const [g, n] of Object.entries(got)) for (let i = 0; i < n; i++) shares.take(g);
  lanes.held += Object.values(got).reduce((a, b) => a + b, 0);
  return got;
}

describe("LaneShares", () => {
  it("lets a group alone take all but the reserve, and always leaves a newcomer room", () => {
    const shares = new LaneShares(64);
    // Alone: 56 of 64 (a group's 50 endpoints all fit); the eighth held back is the reserve.
    expect(shares.room(64)).toEqual({ groups: [], left: [], share: 56, beyondFirst: 56 });
    for (let i = 0; i < 56; i++) shares.take("A");
    expect(shares.under("A")).toBe(false);
    expect(shares.room(8)).toEqual({ groups: ["A"], left: [0], share: 28, beyondFirst: 0 });
    // B arrives: its first lane comes from the reserve; nothing beyond it while only the reserve is free.
    shares.take("B");
    expect(shares.under("B")).toBe(true);
    expect(shares.room(7)).toEqual({ groups: ["A", "B"], left: [0, 27], share: 18, beyondFirst: 0 });
    // As A's lanes free up, A is held to its share beside B.
    for (let i = 0; i < 28; i++) shares.give("A");
    expect(shares.under("A")).toBe(false);
    shares.give("A");
    expect(shares.under("A")).toBe(true);
  });

  it("gives every group at least one lane, however few", () => {
    const shares = new LaneShares(1);
    expect(shares.room(1).share).toBe(1);
    shares.take("A");
    expect(shares.room(0)).toEqual({ groups: ["A"], left: [0], share: 1, beyondFirst: 0 });
    shares.give("A");
    expect(shares.room(1)).toEqual({ groups: [], left: [], share: 1, beyondFirst: 0 });
  });

  it("A's and B's hanging receivers leave C a lane at the next claim: the reserve goes one lane per lane-less group", () => {
    const shares = new LaneShares(64);
    const lanes = { held: 0 };
    // A's 75 endpoints hang: A takes 56, the reserve stays free.
    expect(claim(shares, lanes, 64, { A: 75 })).toEqual({ A: 56 });
    // B's 50 hang too: B gets one lane, from the reserve, not all eight.
    expect(claim(shares, lanes, 64, { A: 19, B: 50 })).toEqual({ B: 1 });
    // C's healthy endpoint is claimed at the next poll (before the fix: no lane until one freed).
    expect(claim(shares, lanes, 64, { A: 19, B: 49, C: 1 })).toEqual({ C: 1 });
    expect(lanes.held).toBe(58);
  });

  it("any N ≤ reserve groups with hanging receivers leave group N + 1 a lane at its first claim, arriving one by one or together", () => {
    for (const total of [64, 16, 9]) {
      const reserve = Math.max(1, Math.floor(total / 8));
      // One by one: the first takes all but the reserve, each next one a single lane.
      let shares = new LaneShares(total);
      const lanes = { held: 0 };
      const due: Record<string, number> = {};
      for (let n = 0; n <= reserve; n++) {
        const g = `G${n}`;
        due[g] = 100;
        const got = claim(shares, lanes, total, due);
        expect({ total, n, got: got[g] ?? 0 }).toEqual({ total, n, got: n === 0 ? total - reserve : 1 });
      }
      // Every lane held now (reserve + 1 groups): the next waits for a lane to free up (the documented bound).
      expect(lanes.held).toBe(total);
      // Together: reserve + 1 groups arriving in the same claim each get a lane, however many are due.
      shares = new LaneShares(total);
      const together = Object.fromEntries(Array.from({ length: reserve + 1 }, (_, i) => [`H${i}`, 100]));
      const got = claim(shares, { held: 0 }, total, together);
      for (const g of Object.keys(together)) expect({ total, g, has: (got[g] ?? 0) >= 1 }).toEqual({ total, g, has: true });
    }
  });
});
