// Small helpers the A/B overhead scripts share: a child's CPU time, waiting until a server answers,
// and the median of a variant's rounds.
import { readFileSync } from "node:fs";

/** User + system CPU time of a process so far, in ms (Linux /proc; clock ticks are 10 ms). */
export function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** Resolves once `url` answers 2xx with `headers`; gives up after two minutes. */
export async function waitFor(url: string, headers: Record<string, string>): Promise<void> {
  for (let i = 0; i < 600; i++) {
    try {
      if ((await fetch(url, { headers })).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${url} never answered`);
}

/** One autocannon round of one variant. */
export interface Sample {
  rps: number;
  p50: number;
  p99: number;
  cpuUs: number;
}

/** Each figure's median over the rounds (robust to the one round a shared machine spoils). */
export function medianSample(samples: Sample[]): Sample {
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  return {
    rps: median(samples.map((r) => r.rps)),
    p50: median(samples.map((r) => r.p50)),
    p99: median(samples.map((r) => r.p99)),
    cpuUs: median(samples.map((r) => r.cpuUs)),
  };
}
