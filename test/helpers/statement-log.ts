// PostgreSQL's own statement log (log_statement = all) read back as statements with their bound
// parameters, cut into one window per request by marker statements the test issues on a connection
// of its own. What the database received is the evidence, whatever layer of the service wrote it.
import { closeSync, openSync, readSync } from "node:fs";
import { StringDecoder } from "node:string_decoder";
import type { Client } from "pg";

/**
 * log_line_prefix for the server: pid and application_name, and a tag that marks where an entry
 * starts (a statement's own line breaks continue the entry without a prefix).
 */
export const LOG_LINE_PREFIX = "@gcs|%p|%a|";
const ENTRY_START = "@gcs|";
const ENTRY = /^@gcs\|(\d+)\|([^|]*)\|([A-Z0-9]+): {2}([\s\S]*)$/;
// Simple protocol: "statement: …"; extended protocol: "execute <unnamed>: …" (or a statement name).
const STATEMENT = /^(?:statement|execute [^:]*): ([\s\S]*)$/;

export interface LoggedStatement {
  pid: number;
  application: string;
  text: string;
  /** Bound parameters by number ($1 is params[1]); null for SQL NULL. Empty for the simple protocol. */
  params: (string | null)[];
}

/** The statements in a stretch of log text, each with the parameters its DETAIL line bound. */
export function parseLog(text: string): LoggedStatement[] {
  const entries: { pid: number; application: string; severity: string; message: string }[] = [];
  for (const line of text.split("\n")) {
    const m = line.startsWith(ENTRY_START) ? ENTRY.exec(line) : null;
    if (m) entries.push({ pid: Number(m[1]), application: m[2], severity: m[3], message: m[4] });
    else if (entries.length > 0) entries[entries.length - 1].message += `\n${line}`;
  }
  const statements: LoggedStatement[] = [];
  const lastOf = new Map<number, LoggedStatement>();
  for (const e of entries) {
    const statement = e.severity === "LOG" ? STATEMENT.exec(e.message) : null;
    if (statement) {
      const s = { pid: e.pid, application: e.application, text: statement[1], params: [] };
      statements.push(s);
      lastOf.set(e.pid, s);
    } else if (e.severity === "DETAIL" && e.message.startsWith("parameters: ")) {
      const s = lastOf.get(e.pid);
      if (s && s.params.length === 0) s.params = parseParameters(e.message.slice("parameters: ".length));
    }
  }
  return statements;
}

/** `$1 = 'a', $2 = NULL, $3 = 'it''s'` → [ , "a", null, "it's"]. */
export function parseParameters(list: string): (string | null)[] {
  const params: (string | null)[] = [];
  const item = /\$(\d+) = (NULL|'((?:[^']|'')*)')(?:, |$)/y;
  let at = 0;
  while (at < list.length) {
    item.lastIndex = at;
    const m = item.exec(list);
    if (!m) throw new Error(`unparsed statement parameters: ${list.slice(at, at + 80)}`);
    params[Number(m[1])] = m[2] === "NULL" ? null : m[3].replaceAll("''", "'");
    at = item.lastIndex;
  }
  return params;
}

/**
 * Reads a server log from its start. `window()` issues a marker statement on the marker connection
 * and returns every statement logged since the previous marker, the marker connection's own left out.
 */
export class StatementLog {
  private readonly fd: number;
  private offset = 0;
  private readonly decoder = new StringDecoder("utf8");
  private readonly chunk = Buffer.alloc(1 << 20);
  private buffered = "";
  private markers = 0;

  constructor(
    private readonly file: string,
    private readonly markerConnection: Client,
    private readonly markerApplication: string,
  ) {
    this.fd = openSync(file, "r");
  }

  async window(): Promise<LoggedStatement[]> {
    const marker = `gcs-isolation-marker-${++this.markers}`;
    await this.markerConnection.query(`SELECT '${marker}'`);
    const needle = `statement: SELECT '${marker}'`;
    const deadline = Date.now() + 10_000;
    let at: number;
    while ((at = this.buffered.indexOf(needle)) < 0) {
      if (!this.readMore()) {
        if (Date.now() > deadline) throw new Error(`marker ${marker} did not reach ${this.file}`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    }
    const end = this.buffered.indexOf("\n", at);
    const cut = end < 0 ? this.buffered.length : end + 1;
    const text = this.buffered.slice(0, cut);
    this.buffered = this.buffered.slice(cut);
    return parseLog(text).filter((s) => s.application !== this.markerApplication);
  }

  close(): void {
    closeSync(this.fd);
  }

  private readMore(): boolean {
    const n = readSync(this.fd, this.chunk, 0, this.chunk.length, this.offset);
    if (n === 0) return false;
    this.offset += n;
    this.buffered += this.decoder.write(this.chunk.subarray(0, n));
    return true;
  }
}
