// The Node.js the service is built for: package.json's engines.node (">=24"). Imported first by
// cli/main.ts, so `gcs`, `npm run start:production` and the image's CMD refuse an older Node with
// one line and exit code 1 before loading anything else (npm itself only warns, EBADENGINE).
// Development gets Node 24 from the `node` dev dependency (npm's scripts put it first on PATH); a
// production host brings its own: the Dockerfile's pinned node:24 image is the supported way.
import { readFileSync } from "node:fs";
import path from "node:path";

/** The lowest major version engines.node allows (">=24" → 24), or undefined when it says none. */
export function requiredMajor(engines: string | undefined): number | undefined {
  const m = /^\s*>=?\s*v?(\d+)/.exec(engines ?? "");
  return m ? Number(m[1]) : undefined;
}

/** The refusal line for `version` (process.version), or undefined when it is supported. */
export function unsupportedNode(version: string, engines: string | undefined): string | undefined {
  const need = requiredMajor(engines);
  const major = Number(/^v?(\d+)/.exec(version)?.[1]);
  if (need === undefined || major >= need) return undefined;
  return `gcs: Node.js ${need} or later is required (engines.node "${engines}"), this is ${version}: use the node:${need} image (Dockerfile), install Node ${need}, or run through npm after npm ci (its node dev dependency is Node ${need})`;
}

function check() {
  let engines: string | undefined;
  try {
    // ../../package.json both from src/cli (tsx) and from dist/cli.
    engines = (JSON.parse(readFileSync(path.join(__dirname, "../../package.json"), "utf8")) as { engines?: { node?: string } }).engines?.node;
  } catch {
    return; // no package.json beside the build: nothing to hold it to
  }
  const refusal = process.env.GCS_IGNORE_NODE_VERSION === "1" ? undefined : unsupportedNode(process.version, engines);
  if (refusal) {
    console.error(refusal);
    process.exit(1);
  }
}

check();
