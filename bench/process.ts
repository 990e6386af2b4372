// Small helpers the A/B overhead scripts share: a child's CPU time, and waiting until a server answers.
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
