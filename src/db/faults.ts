// What the service does when the database fails under a request (db/errors.ts tells which): the
// caller gets 503 `unavailable` or 504 `query_timeout`, never a 500, and the log gets one line when
// an outage starts and one when it ends, instead of a line and a stack per refused request (during
// an outage every request fails the same way; megabytes of identical stacks hide the line that
// matters). One per app, shared by REST, /graphql and /mcp; each instance reports what it saw.
import type { GraphQLError } from "graphql";
import { queryTimeout, unavailable, unknownToken } from "../errors";
import type { Logger } from "../logger";
import { databaseFault, isCredentialRefusal } from "./errors";

/** Seconds a client is told to wait (Retry-After) when the database is unavailable. */
export const RETRY_AFTER_SECONDS = 2;

export class DatabaseFaults {
  private outageSince: number | undefined;
  private lastRefusal = 0;
  private refused = 0;

  constructor(
    private readonly logger: Pick<Logger, "warn" | "info" | "debug">,
    private readonly statementTimeoutMs: number,
  ) {}

  /**
   * The API error for `err` when it is a database fault, else undefined. A refusal for an
   * unavailable database is counted (and logged only if it starts an outage); a statement timeout
   * is logged as one line without a stack: it points at a slow query, not at a broken service.
   */
  errorFor(err: unknown, where?: string): GraphQLError | undefined {
    // Not a fault: the request's remembered credential no longer grants it (auth/remembered-credentials.ts).
    if (isCredentialRefusal(err)) return unknownToken();
    const fault = databaseFault(err);
    if (!fault) return undefined;
    if (fault.kind === "timeout") {
      this.logger.warn({ where, timeoutMs: this.statementTimeoutMs }, "statement cancelled by statement_timeout");
      return queryTimeout(Math.round(this.statementTimeoutMs / 100) / 10);
    }
    this.lastRefusal = Date.now();
    this.refused++;
    if (this.outageSince === undefined) {
      this.outageSince = this.lastRefusal;
      this.refused = 1;
      this.logger.warn({ reason: fault.reason }, "database unavailable: answering 503 unavailable until it is back");
    } else {
      this.logger.debug({ reason: fault.reason, where }, "request refused: database unavailable");
    }
    return unavailable();
  }

  /**
   * A request that started at `startedAt` (Date.now()) used the database and did not fail for it.
   * Only one that started after the last refusal proves the database is back: a request already
   * running may have done its queries before the outage began.
   */
  succeeded(startedAt: number): void {
    if (this.outageSince === undefined || startedAt <= this.lastRefusal) return;
    this.logger.info({ refused: this.refused, downMs: Date.now() - this.outageSince }, "database reachable again");
    this.outageSince = undefined;
    this.refused = 0;
  }
}
