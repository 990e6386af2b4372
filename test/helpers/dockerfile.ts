// Reads a Dockerfile into stages and instructions: enough to lint ours
// (test/unit/container-files.test.ts) and to replay its runtime stage outside Docker
// (scripts/production-smoke.ts). Supports what the Dockerfile here uses: comments, line
// continuations, `--flag=value` options, and the exec (JSON) and shell forms.
import path from "node:path";

export interface Instruction {
  keyword: string;
  /** `--from=build` → { from: "build" } */
  flags: Record<string, string>;
  /** The exec form's array; the shell form of RUN/CMD/HEALTHCHECK as one string; else the words. */
  args: string[];
  exec: boolean;
  line: number;
}

export interface Stage {
  name: string;
  from: string;
  instructions: Instruction[];
}

export function parseDockerfile(text: string): Stage[] {
  const stages: Stage[] = [];
  let pending = "";
  let startLine = 0;
  text.split("\n").forEach((raw, index) => {
    const line = raw.trim();
    if (line.startsWith("#") || (!pending && line === "")) return; // comments, also inside a continuation
    if (!pending) startLine = index + 1;
    if (line.endsWith("\\")) {
      pending += line.slice(0, -1) + " ";
      return;
    }
    const instruction = parseInstruction(pending + line, startLine);
    pending = "";
    if (instruction.keyword === "FROM") {
      const [from, as, name] = instruction.args;
      stages.push({ name: as?.toUpperCase() === "AS" ? name : String(stages.length), from, instructions: [] });
    } else if (stages.length) {
      stages.at(-1)!.instructions.push(instruction);
    } else if (instruction.keyword !== "ARG") {
      throw new Error(`line ${startLine}: ${instruction.keyword} before FROM`);
    }
  });
  if (pending) throw new Error("the last instruction ends with a line continuation");
  return stages;
}

function parseInstruction(source: string, line: number): Instruction {
  const [, word, tail] = /^(\S+)\s*(.*)$/.exec(source.trim())!;
  const keyword = word.toUpperCase();
  let rest = tail;
  const flags: Record<string, string> = {};
  for (let flag; (flag = /^--([a-z-]+)(?:=(\S*))?\s*/.exec(rest)); rest = rest.slice(flag[0].length)) {
    flags[flag[1]] = flag[2] ?? "true";
  }
  // HEALTHCHECK's own command follows its options as `CMD …`.
  if (keyword === "HEALTHCHECK") {
    const cmd = /^CMD\s+(.*)$/i.exec(rest);
    if (!cmd) return { keyword, flags, args: [rest.trim()], exec: false, line };
    rest = cmd[1];
  }
  const trimmed = rest.trim();
  if (trimmed.startsWith("[")) {
    try {
      return { keyword, flags, args: JSON.parse(trimmed) as string[], exec: true, line };
    } catch {
      // not valid JSON: Docker runs it in the shell form
    }
  }
  const shellForm = ["RUN", "CMD", "ENTRYPOINT", "HEALTHCHECK"].includes(keyword);
  return { keyword, flags, args: shellForm ? [trimmed] : trimmed.split(/\s+/).filter(Boolean), exec: false, line };
}

/** `ENV A=1 B=2` (or the old `ENV A 1`) → { A: "1", B: "2" }. */
export function envOf(instruction: Instruction): Record<string, string> {
  const { args } = instruction;
  if (args.length === 2 && !args[0].includes("=")) return { [args[0]]: args[1] };
  return Object.fromEntries(args.map((pair) => [pair.slice(0, pair.indexOf("=")), pair.slice(pair.indexOf("=") + 1)]));
}

/**
 * .dockerignore text → whether a path (relative to the build context) stays out of the context:
 * the last pattern matching the path or one of its parent directories wins.
 */
export function dockerIgnore(text: string): (file: string) => boolean {
  const rules = text
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith("#"))
    .map((l) => {
      const negate = l.startsWith("!");
      const glob = path.posix.normalize(negate ? l.slice(1) : l).replace(/^\//, "");
      const source = glob
        .replace(/[.+^${}()|[\]\\]/g, "\\$&")
        .replace(/\*\*/g, "\0")
        .replace(/\*/g, "[^/]*")
        .replace(/\?/g, "[^/]")
        .replace(/\0/g, ".*");
      return { negate, re: new RegExp(`^${source}(/.*)?$`) };
    });
  return (file) => {
    let ignored = false;
    for (const rule of rules) if (rule.re.test(file)) ignored = !rule.negate;
    return ignored;
  };
}
