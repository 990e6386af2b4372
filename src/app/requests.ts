// What every request gets before any door sees it: an id, a logger made on first use, the record of
// its statements and timings (sent as headers), the access line, a trace, and the database faults.
import { randomUUID } from "node:crypto";
import type { RequestListener } from "node:http";
import type express from "express";
import type { Request, Response } from "express";
import { startRecord, serverTiming } from "../observability/request";
import { recordRequest } from "../observability/metrics";
import { traceRequest, tracingActive } from "../observability/tracing";
import { routeTemplate } from "../observability/route";
import type { DatabaseFaults } from "../db/faults";
import type { Credential } from "../auth/authenticate";
import type { Services } from "../services";

const REQUEST_ID = /^[\w.:-]{1,128}$/;

/** The access line and the request metrics of a finished response: the one place both are written. */
export interface RequestFinished {
  requestId: string;
  method: string;
  /** The path only: query strings can carry personal data (an e-mail filter). */
  path: string;
  /** The metrics label (observability/route.ts). */
  route: string;
  status: number;
  ms: number;
  statements: number;
  traceId?: string;
  credential?: Credential;
}
export type FinishRequest = (finished: RequestFinished) => void;

export function requestFinisher(services: Services): FinishRequest {
  // The access line's fields are fixed and hold no secret: it skips the redaction every other line
  // pays (a walk of every logged object).
  const accessLog = services.logger.child({}, { redact: [] });
  return ({ requestId, method, path, route, status, ms, statements, traceId, credential: who }) => {
    recordRequest(method, route, status, ms / 1000, statements);
    // Who read what: the credential's id and kind and its group (never the token), so an auditor
    // can answer "who read this guest's data" from the access log alone.
    accessLog.info(
      {
        requestId,
        method,
        path,
        status,
        ms: Math.round(ms * 10) / 10,
        sql: statements,
        ...(traceId ? { traceId } : {}),
        ...(who ? { credential: { kind: who.kind, id: who.id }, propertyGroupId: who.propertyGroupId } : {}),
      },
      "request",
    );
  };
}

/** The request's X-Request-Id: the caller's when it is a sane token, else a new uuid. */
export function requestIdOf(given: string | string[] | undefined): string {
  return typeof given === "string" && REQUEST_ID.test(given) ? given : randomUUID();
}

export function mountRequestRecord(app: express.Express, finish: FinishRequest, services: Services, faults: DatabaseFaults, draining: () => boolean) {
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
    req.id = requestIdOf(req.headers["x-request-id"]);
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
      finish({ requestId: req.id, method: req.method, path, route: routeTemplate(req), status: res.statusCode, ms, statements: record.statements,
        traceId: res.locals.traceId, credential: res.locals.credential as Credential | undefined });
    });
    traceRequest(req, res, next);
  });
}

const HEALTHZ_BODY = JSON.stringify({ status: "ok" });
const HEALTHZ_TIMING = serverTiming({ statements: 0, sqlMs: 0 });

/**
 * The process's request listener: GET and HEAD /healthz are answered here, before Express, with the
 * headers, access line and metrics Express's route would give them; everything else goes to `app`.
 * Load balancers probe it several times a second per instance, and through Express's stack the
 * answer cost 2.4× a bare Node server's CPU (bench/results: the fixed-cost reference row). A probe
 * that needs what only the stack gives (a trace span, CORS headers) goes through it.
 */
export function answerHealthzFirst(app: RequestListener, finish: FinishRequest, opts: { cors: boolean; draining: () => boolean }): RequestListener {
  return (req, res) => {
    if (req.url !== "/healthz" || (req.method !== "GET" && req.method !== "HEAD") || tracingActive() || (opts.cors && req.headers.origin !== undefined)) {
      return app(req, res);
    }
    const started = process.hrtime.bigint();
    const requestId = requestIdOf(req.headers["x-request-id"]);
    const headers = [
      "X-Request-Id", requestId,
      "X-Content-Type-Options", "nosniff",
      "Content-Type", "application/json; charset=utf-8",
      "Content-Length", String(HEALTHZ_BODY.length),
      "X-Sql-Statements", "0",
      "Server-Timing", HEALTHZ_TIMING,
    ];
    if (opts.draining()) headers.push("Connection", "close");
    res.writeHead(200, headers);
    res.end(req.method === "HEAD" ? undefined : HEALTHZ_BODY);
    finish({ requestId, method: req.method, path: "/healthz", route: "/healthz", status: 200, ms: Number(process.hrtime.bigint() - started) / 1e6, statements: 0 });
  };
}
