// The fixture load's progress (rate, time left, throttling, terminal or plain lines), its chunking
// and the anchor day of its dates, without a database.
import { resolveAnchorDate } from "../../src/fixtures/anchor";
import { CHUNK_GUESTS, chunkGuests } from "../../src/fixtures/bulk";
import { duration, LoadProgress, RATE_MIN_GUESTS, streamProgress } from "../../src/fixtures/progress";

/** A meter on a hand-moved clock, recording what it reports. */
function meter(total: number) {
  let now = 0;
  const lines: { line: string; transient?: boolean }[] = [];
  const m = new LoadProgress(total, (line, transient) => lines.push({ line, transient }), () => now);
  return { m, lines, tick: (ms: number) => (now += ms) };
}

describe("fixture load progress", () => {
  it("reports guests per second and the time left, at most once a second, then a closing line", () => {
    const { m, lines, tick } = meter(1_000_000);
    tick(500);
    m.add(50_000); // half a second in: too soon
    expect(lines).toEqual([]);
    tick(4_500);
    m.add(50_000); // 100,000 in 5 s: 20,000/s, 900,000 left = 45 s
    expect(lines).toEqual([{ line: "guests 100,000/1,000,000 (10.0%), 20,000 guests/s, about 45s left", transient: true }]);
    tick(300);
    m.add(10_000);
    expect(lines).toHaveLength(1); // throttled
    tick(700);
    m.add(10_000); // 120,000 in 6 s
    expect(lines[1].line).toBe("guests 120,000/1,000,000 (12.0%), 20,000 guests/s, about 44s left");
    tick(44_000);
    m.add(880_000); // the last chunk: no rate line at 100 %
    expect(lines).toHaveLength(2);
    m.finish();
    expect(lines[2]).toEqual({ line: "guests 1,000,000/1,000,000 loaded in 50s, 20,000 guests/s", transient: undefined });
  });

  it("stays quiet for small loads, however slow", () => {
    const { m, lines, tick } = meter(RATE_MIN_GUESTS - 1);
    for (let i = 0; i < 9; i++) {
      tick(5_000);
      m.add(1_000);
    }
    m.finish();
    expect(lines).toEqual([]);
  });

  it("writes durations as a wait is read", () => {
    expect([0.4, 42, 185, 3_725, Infinity].map(duration)).toEqual(["0s", "42s", "3m05s", "1h02m", "?"]);
  });

  it("rewrites rate lines in place on a terminal and writes plain lines elsewhere", () => {
    const written = (isTTY: boolean) => {
      const out: string[] = [];
      const sink = streamProgress({ isTTY, write: (s: string) => out.push(s) });
      sink("group A: organisation");
      sink("guests 10/100", true);
      sink("guests 20/100", true);
      sink("vacuum and analyze");
      return out.join("");
    };
    expect(written(false)).toBe("group A: organisation\nguests 10/100\nguests 20/100\nvacuum and analyze\n");
    expect(written(true)).toBe("group A: organisation\nguests 10/100\r\x1b[Kguests 20/100\r\x1b[Kvacuum and analyze\n");
  });

  it("loads about twenty chunks, between 1,000 and CHUNK_GUESTS guests each", () => {
    expect([300, 10_000, 100_000, 1_000_000, 5_000_000].map(chunkGuests)).toEqual([1_000, 1_000, 5_000, CHUNK_GUESTS, CHUNK_GUESTS]);
  });
});

describe("fixture anchor day", () => {
  const now = new Date("2026-11-24T23:59:59Z");

  it("is the given day, else GCS_FIXTURE_DATE, else today's UTC date", () => {
    expect(resolveAnchorDate("2026-03-14", { GCS_FIXTURE_DATE: "2025-01-01" }, now)).toBe("2026-03-14");
    expect(resolveAnchorDate(undefined, { GCS_FIXTURE_DATE: "2025-01-01" }, now)).toBe("2025-01-01");
    expect(resolveAnchorDate(undefined, {}, now)).toBe("2026-11-24");
    expect(resolveAnchorDate(undefined, { GCS_FIXTURE_DATE: "" }, now)).toBe("2026-11-24");
  });

  it("refuses anything but a real YYYY-MM-DD day, naming the setting", () => {
    for (const bad of ["2026-02-30", "2026-13-01", "26-01-01", "2026-1-1", "today", "2026-01-01T00:00:00Z", "0001-01-01"]) {
      expect(() => resolveAnchorDate(undefined, { GCS_FIXTURE_DATE: bad }, now)).toThrow(/^GCS_FIXTURE_DATE must be a date as YYYY-MM-DD/);
    }
    expect(() => resolveAnchorDate("tomorrow", {}, now)).toThrow(/^anchorDate must be a date/);
  });
});
