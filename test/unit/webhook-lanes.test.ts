// Issue 40: each group's share of an instance's webhook lanes (src/webhooks/sender.ts LaneShares):
// one group's receivers, however many hang, always leave lanes for the next group.
import { LaneShares } from "../../src/webhooks/sender";

describe("LaneShares", () => {
  it("lets a group alone take all but the reserve, and always leaves a newcomer room", () => {
    const shares = new LaneShares(64);
    // Alone: 56 of 64 (a group's 50 endpoints all fit); the eighth held back is the reserve.
    expect(shares.room()).toEqual({ groups: [], left: [], share: 56 });
    for (let i = 0; i < 56; i++) shares.take("A");
    expect(shares.under("A")).toBe(false);
    expect(shares.room()).toEqual({ groups: ["A"], left: [0], share: 28 });
    // B arrives: it may take up to its share (the free lanes bound it), A none more.
    shares.take("B");
    expect(shares.under("B")).toBe(true);
    expect(shares.room()).toEqual({ groups: ["A", "B"], left: [0, 27], share: 18 });
    // As A's lanes free up, A is held to its share beside B.
    for (let i = 0; i < 28; i++) shares.give("A");
    expect(shares.under("A")).toBe(false);
    shares.give("A");
    expect(shares.under("A")).toBe(true);
  });

  it("gives every group at least one lane, however few", () => {
    const shares = new LaneShares(1);
    expect(shares.room().share).toBe(1);
    shares.take("A");
    expect(shares.room()).toEqual({ groups: ["A"], left: [0], share: 1 });
    shares.give("A");
    expect(shares.room()).toEqual({ groups: [], left: [], share: 1 });
  });
});
