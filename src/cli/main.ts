// gcs: the command line (commands in cli/program.ts). Exit codes: 0 done, 1 the command failed,
// 2 usage error. Failures are one line on stderr, with no stack and no credentials.
import "./node-version"; // first: an unsupported Node is refused before anything else loads
import { readFileSync } from "node:fs";
import path from "node:path";
import { CommanderError } from "commander";
import { redactUrlsIn } from "../redact-url";
import { UsageError } from "./args";
import { buildProgram } from "./program";

async function main(argv: string[]): Promise<number> {
  try {
    await buildProgram(packageVersion()).parseAsync(argv, { from: "user" });
    return 0;
  } catch (err) {
    // Commander has printed its own message (or the help, or the version) already.
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
    if (err instanceof UsageError) {
      console.error(`gcs: ${err.message}`);
      return 2;
    }
    console.error(`gcs: ${oneLine(err)}`);
    return 1;
  }
}

/** From the package root: ../../package.json both from src/cli (tsx) and from dist/cli. */
function packageVersion(): string {
  return (JSON.parse(readFileSync(path.join(__dirname, "../../package.json"), "utf8")) as { version: string }).version;
}

/** One line, no stack, no connection string credentials. */
function oneLine(err: unknown): string {
  const e = (err ?? {}) as { code?: string; message?: unknown; cause?: unknown };
  const reason =
    e.code === "ECONNREFUSED" || e.code === "ENOTFOUND"
      ? `cannot reach the database (${e.code})`
      : typeof e.message === "string" && e.message.trim()
        ? e.message
        : String(err);
  const line = redactUrlsIn(reason).trim().split("\n")[0];
  // Prisma 6's client on adapter-pg 7 reports a database error as "Unknown error: [object Object]".
  return line.includes("[object Object]") ? "the database refused the command (the Prisma client gave no detail)" : line;
}

// `gcs --help | head`: the reader went away, which is not an error.
process.stdout.on("error", (err: NodeJS.ErrnoException) => process.exit(err.code === "EPIPE" ? 0 : 1));

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(`gcs: ${oneLine(err)}`);
    process.exit(1);
  },
);
