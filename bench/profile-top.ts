// Summarises a V8 CPU profile (.cpuprofile, from node --cpu-prof or BENCH_CPU_PROF): self time by
// where the code lives (our src/ or dist/, each node_modules package, node's internals, GC, idle)
// and the functions with the most self time and with the most total time (self and callees; a
// function that recurses counts once per stack), as shares of the busy (not idle) time. [last seconds]
// keeps only the profile's last seconds: the measured run, not the start-up.
// Usage: tsx bench/profile-top.ts <file.cpuprofile> [top functions, default 25] [last seconds]
import { readFileSync } from "node:fs";

interface Node {
  id: number;
  children?: number[];
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}
const [file, topArg, lastArg] = process.argv.slice(2);
const profile = JSON.parse(readFileSync(file, "utf8")) as { nodes: Node[]; samples: number[]; timeDeltas: number[]; startTime: number; endTime: number };
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const self = new Map<number, number>();
const from = lastArg ? profile.endTime - Number(lastArg) * 1e6 : -Infinity;
let at = profile.startTime;
profile.samples.forEach((id, i) => {
  at += profile.timeDeltas[i] ?? 0;
  if (at >= from && byId.get(id)!.callFrame.functionName !== "(idle)") self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
});
const total = [...self.values()].reduce((a, b) => a + b, 0);

const where = (url: string, name: string) => {
  if (!url) return name.startsWith("(") ? name : "(native)";
  if (url.startsWith("wasm://")) return "WebAssembly (Prisma's query compiler)";
  if (url.includes("/generated/prisma")) return "Prisma client (generated runtime)";
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1];
  if (pkg) return pkg;
  if (url.startsWith("node:")) return "node internals";
  if (/\/(src|dist)\//.test(url)) return "service code";
  if (/\/bench\//.test(url)) return "bench code";
  return url;
};
const groups = new Map<string, number>();
const functions = new Map<string, number>();
for (const [id, us] of self) {
  const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
  const group = where(url, functionName);
  groups.set(group, (groups.get(group) ?? 0) + us);
  const key = `${functionName || "(anonymous)"} ${url.replace(/^.*node_modules\//, "").replace(/^.*\/(src|dist|bench)\//, "$1/")}:${lineNumber + 1}`;
  functions.set(key, (functions.get(key) ?? 0) + us);
}
const pct = (us: number) => `${((us / total) * 100).toFixed(1).padStart(5)}%`;
console.log(`${file}: ${(total / 1e6).toFixed(1)} s busy${lastArg ? ` in the last ${lastArg} s` : ""}`);
console.log("\nself time by where the code lives:");
for (const [g, us] of [...groups].sort((a, b) => b[1] - a[1]).slice(0, 20)) console.log(`${pct(us)}  ${g}`);
console.log("\nfunctions by self time:");
for (const [f, us] of [...functions].sort((a, b) => b[1] - a[1]).slice(0, Number(topArg ?? 25))) console.log(`${pct(us)}  ${f}`);

// Total time: each sample counts once for every distinct function on its stack.
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const keyOf = (id: number) => {
  const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
  return `${functionName || "(anonymous)"} ${url.replace(/^.*node_modules\//, "").replace(/^.*\/(src|dist|bench)\//, "$1/")}:${lineNumber + 1}`;
};
const inclusive = new Map<string, number>();
for (const [id, us] of self) {
  const seen = new Set<string>();
  for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
    const key = keyOf(at);
    if (seen.has(key) || key.startsWith("(root)")) continue;
    seen.add(key);
    inclusive.set(key, (inclusive.get(key) ?? 0) + us);
  }
}
console.log("\nfunctions by total time:");
for (const [f, us] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, Number(topArg ?? 25))) console.log(`${pct(us)}  ${f}`);
