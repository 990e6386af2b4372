// Structured logs (pino). Credentials never reach a log line: authorization headers and any field
// named like a secret are redacted.
import pino from "pino";

export function createLogger(level: string) {
  return pino({
    level,
    redact: {
      paths: [
        "req.headers.authorization",
        "headers.authorization",
        "*.token",
        "*.secret",
        "*.password",
        "*.connectionString",
      ],
      censor: "[redacted]",
    },
  });
}

export type Logger = ReturnType<typeof createLogger>;
