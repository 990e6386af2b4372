// observability/request-histogram.ts: for any observations, the registry writes the same lines as
// for prom-client's own Histogram with the same name, labels and buckets (bounds, values on a bound,
// above every bound, NaN-free sums), and reset() empties it.
import fc from "fast-check";
import { Histogram, Registry } from "prom-client";
import { RequestHistogram } from "../../src/observability/request-histogram";

const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const LABELS = ["method", "route", "status"] as const;

const observation = fc.record({
  method: fc.constantFrom("GET", "POST", "DELETE"),
  route: fc.constantFrom("/v1/guests", "/v1/guests/:id", "/graphql", "unmatched", 'a "quoted" \\ route'),
  status: fc.constantFrom("200", "404", "500"),
  seconds: fc.oneof(fc.constantFrom(...BUCKETS, 0, 11, 1e6), fc.double({ min: 0, max: 20, noNaN: true })),
});

interface Observation {
  method: string;
  route: string;
  status: string;
  seconds: number;
}

async function expositions(observations: Observation[]) {
  const theirs = new Registry();
  const reference = new Histogram({ name: "h_seconds", help: "a help text", labelNames: LABELS, buckets: BUCKETS, registers: [theirs] });
  const ours = new Registry();
  const histogram = new RequestHistogram("h_seconds", "a help text", LABELS, BUCKETS, ours);
  for (const o of observations) {
    reference.observe({ method: o.method, route: o.route, status: o.status }, o.seconds);
    histogram.observe([o.method, o.route, o.status], o.seconds);
  }
  return { theirs: await theirs.metrics(), ours: await ours.metrics(), histogram };
}

const sortedLines = (text: string) => text.split("\n").sort();

describe("RequestHistogram", () => {
  test("writes what prom-client's Histogram writes for the same observations", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(observation, { maxLength: 60 }), async (observations) => {
        const { theirs, ours } = await expositions(observations);
        // prom-client lists series in first-seen order too, but the order of lines is no part of the format.
        expect(sortedLines(ours)).toEqual(sortedLines(theirs));
      }),
      { numRuns: 200 },
    );
  });

  test("a value on a bound counts in that bucket, one above every bound only in +Inf", async () => {
    const { ours } = await expositions([
      { method: "GET", route: "/v1/guests", status: "200", seconds: 0.005 },
      { method: "GET", route: "/v1/guests", status: "200", seconds: 11 },
    ]);
    const labels = 'method="GET",route="/v1/guests",status="200"';
    expect(ours).toContain(`h_seconds_bucket{le="0.005",${labels}} 1`);
    expect(ours).toContain(`h_seconds_bucket{le="10",${labels}} 1`);
    expect(ours).toContain(`h_seconds_bucket{le="+Inf",${labels}} 2`);
    expect(ours).toContain(`h_seconds_count{${labels}} 2`);
  });

  test("reset() forgets every series", async () => {
    const { histogram } = await expositions([{ method: "GET", route: "/v1/guests", status: "200", seconds: 0.2 }]);
    histogram.reset();
    expect(histogram.get().values).toEqual([]);
  });
});
