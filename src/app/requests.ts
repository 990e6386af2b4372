// What every request gets before any door sees it: an id, a logger made on first use, the record of
// its statements and timings (sent as headers), the access line, a trace, and the database faults.
import { randomUUID } from "node:crypto";
import type express from "express";
import type { Request, Response } from "express";
import { startRecord, serverTiming } from "../observability/request";
import { recordRequest } from "../observability/metrics";
import { traceRequest } from "../observability/tracing";
import { routeTemplate } from "../observability/route";
import type { DatabaseFaults } from "../db/faults";
import type { Credential } from "../auth/authenticate";
import type { Services } from "../services";

const REQUEST_ID = /^[\w.:-]{1,128}$/;

export function mountRequestRecord(app: express.Express, services: Services, faults: DatabaseFaults, draining: () => boolean) {
  // The access line's fields are fixed and hold no secret: it skips the redaction every other line
  // pays (a walk of every logged object).
  const accessLog = services.logger.child({}, { redact: [] });
  // req.log is made on first use (most requests log only their access line), by a getter on the
  // prototype Express gives every request: defining one on each request costs a slower object.
  Object.defineProperty(app.request, "log", {
    configurable: true,
    get(this: Request) {
      const log = services.logger.child({ requestId: this.id });
      Object.defineProperty(this, "log", { value: log, configurable: true });
      return log;
    },
  });
  // The statement count and timings go out as headers, so they are taken just before the headers are
  // written: by one method on the prototype Express gives every response. (A closure assigned to each
  // response instead made V8 promote every request's objects to the old generation: docs/performance.md.)
  const writeHead = app.response.writeHead;
  app.response.writeHead = function (this: Response, ...args: unknown[]) {
    const record = this.record;
    if (record && !this.headersSent) {
      this.setHeader("X-Sql-Statements", String(record.statements));
      this.setHeader("Server-Timing", serverTiming(record));
      // While draining, a kept-alive connection would only be cut later: close it after this response.
      if (draining()) this.setHeader("Connection", "close");
    }
    return (writeHead as (...a: unknown[]) => Response).apply(this, args);
  } as typeof app.response.writeHead;
  app.use((req, res, next) => {
    const given = req.headers["x-request-id"];
    req.id = typeof given === "string" && REQUEST_ID.test(given) ? given : randomUUID();
    req.faults = faults;
    res.setHeader("X-Request-Id", req.id);
    const startedAt = Date.now();
    const started = process.hrtime.bigint();
    // Taken now: a mounted handler (Apollo on /graphql) may answer while Express holds req.url stripped of its mount path.
    const path = req.path;
    const record = startRecord(req.id);
    res.record = record;
    res.on("finish", () => {
      if (res.statusCode < 500 && record.statements > 0) faults.succeeded(startedAt);
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      recordRequest(req.method, routeTemplate(req), res.statusCode, ms / 1000, record.statements);
      // The path only: query strings can carry personal data (an e-mail filter).
      // Who read what: the credential's id and kind and its group (never the token), so an auditor
      // can answer "who read this guest's data" from the access log alone.
      const who = res.locals.credential as Credential | undefined;
      accessLog.info(
        {
          requestId: req.id,
          method: req.method,
          path,
          status: res.statusCode,
          ms: Math.round(ms * 10) / 10,
          sql: record.statements,
          ...(res.locals.traceId ? { traceId: res.locals.traceId } : {}),
          ...(who ? { credential: { kind: who.kind, id: who.id }, propertyGroupId: who.propertyGroupId } : {}),
        },
        "request",
      );
    });
    traceRequest(req, res, next);
  });
}
