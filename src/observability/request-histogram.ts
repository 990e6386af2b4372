// A Prometheus histogram for the request path. prom-client's Histogram builds a closure, validates
// the label object and hashes it on every observe: about 4 µs each, two per request (bench/rest-
// overhead.ts profiles of the guests page). Here a series is found by one Map lookup on its label
// values, and prom-client's registry gets the same exposition as from its own histograms: cumulative
// `_bucket` lines with `le` (and +Inf), `_sum` and `_count` per label set.
import type { Registry } from "prom-client";

interface Series {
  labels: Record<string, string>;
  /** Observations per bucket, not cumulative; the last one counts values above every bound. */
  counts: number[];
  sum: number;
  count: number;
}

export class RequestHistogram {
  readonly type = "histogram";
  readonly aggregator = "sum";
  private readonly series = new Map<string, Series>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelNames: readonly string[],
    private readonly buckets: readonly number[],
    registry: Registry,
  ) {
    registry.registerMetric(this as never);
  }

  /** `values` in the order of the label names. */
  observe(values: readonly string[], value: number): void {
    // NUL joins the values: no label value here holds one (methods are tokens, routes are templates).
    const key = values.join("\u0000");
    let s = this.series.get(key);
    if (!s) {
      const labels = Object.fromEntries(this.labelNames.map((name, i) => [name, values[i]]));
      s = { labels, counts: new Array<number>(this.buckets.length + 1).fill(0), sum: 0, count: 0 };
      this.series.set(key, s);
    }
    let bucket = 0;
    while (bucket < this.buckets.length && value > this.buckets[bucket]) bucket++;
    s.counts[bucket]++;
    s.sum += value;
    s.count++;
  }

  /** What prom-client's registry reads at a scrape. */
  get() {
    const values: { labels: Record<string, string | number>; value: number; metricName: string }[] = [];
    for (const s of this.series.values()) {
      let cumulative = 0;
      this.buckets.forEach((le, i) => {
        cumulative += s.counts[i];
        values.push({ labels: { le, ...s.labels }, value: cumulative, metricName: `${this.name}_bucket` });
      });
      values.push({ labels: { le: "+Inf", ...s.labels }, value: s.count, metricName: `${this.name}_bucket` });
      values.push({ labels: s.labels, value: s.sum, metricName: `${this.name}_sum` });
      values.push({ labels: s.labels, value: s.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  reset(): void {
    this.series.clear();
  }
}
