// Structured logs (pino). Credentials never reach a log line: authorization headers and any field
// named like a secret are redacted. JSON lines for machines; at a terminal, pino-pretty's coloured
// lines (loaded only then, in pino's transport worker).
import pino from "pino";

export type LogFormat = "json" | "pretty";

/** LOG_FORMAT when set, else pretty at a terminal and JSON anywhere else (files, pipes, collectors). */
export function chooseLogFormat(override: LogFormat | undefined, isTTY: boolean | undefined): LogFormat {
  return override ?? (isTTY ? "pretty" : "json");
}

/** Fields named like a secret, at the top level of a log call and one level down. */
const SECRET_FIELDS = ["token", "secret", "password", "connectionString", "authorization"];

/** How long a JSON line may wait in the buffer before it is written. */
const FLUSH_MS = 250;

/**
 * Standard output for JSON lines, written in batches of 4 KB and at least every FLUSH_MS: a write per
 * line costs the event loop a thread-pool round trip per request (the access line). Whatever is
 * still buffered is written when the process exits (pino flushes its destinations then).
 */
function bufferedStdout(): pino.DestinationStream {
  const out = pino.destination({ dest: 1, minLength: 4096, sync: false });
  setInterval(() => out.flush(), FLUSH_MS).unref();
  return out;
}

export function createLogger(level: string, format: LogFormat = "json", destination?: pino.DestinationStream) {
  return pino({
    level,
    redact: {
      paths: ["req.headers.authorization", ...SECRET_FIELDS, ...SECRET_FIELDS.map((f) => `*.${f}`)],
      censor: "[redacted]",
    },
    ...(format === "pretty"
      ? { transport: { target: "pino-pretty", options: { colorize: true, translateTime: "SYS:HH:MM:ss.l", ignore: "pid,hostname" } } }
      : {}),
  }, destination ?? (format === "json" ? bufferedStdout() : undefined));
}

export type Logger = ReturnType<typeof createLogger>;
