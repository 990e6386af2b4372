// An open event stream (GET /v1/events/stream, /graphql/stream) ends when its credential stops
// opening it: an API key, partner or static token revoked, expired or without the stream's scope any
// more, a web-app session past its expiry (issue 40). A stream authenticates once, when it opens, so
// this instance checks again every `intervalMs` (GCS_STREAM_CREDENTIAL_CHECK_MS, at most 4 s, so that
// the interval, the statement and a late timer stay within 5 s) the tokens behind all of its open
// streams in ONE statement (the request's own lookup functions, read where a request reads them),
// and a session's expiry without any. Each instance checks its own streams against the one
// database, so a key revoked anywhere ends its streams on every instance.
// While the database cannot be read, streams stay open: their feed cannot read new events either.
import type { GraphQLError } from "graphql";
import { bearerToken, credentialOfRow, opaqueKindOf, type Credential } from "../auth/authenticate";
import { hashToken } from "../auth/secrets";
import { looksLikeJwt, sessionRefusedAt } from "../auth/session";
import { findTokensByHash, type OpaqueTokenKind } from "../data/stores/credentials";
import type { Database } from "../db/database";
import { acrossGroups } from "../db/session";
import { missingScope, unauthorized } from "../errors";
import type { Logger } from "../logger";

/** One open stream: what it was opened with, and how to end it with the error a new request would get. */
interface Watched {
  readonly credential: Credential;
  /** The scope the stream needs, when it needs one. */
  readonly scope: string | undefined;
  readonly end: (err: GraphQLError) => void;
}

/** The open streams of one opaque token, keyed by its hash (never the token itself). */
interface TokenStreams {
  kind: OpaqueTokenKind;
  streams: Set<Watched>;
}

export class CredentialWatch {
  private readonly tokens = new Map<string, TokenStreams>();
  /** Session streams, with when a request with their token is refused (ms). */
  private readonly sessions = new Map<Watched, number>();
  private timer?: NodeJS.Timeout;
  private failing = false;

  constructor(
    private readonly db: Database,
    private readonly intervalMs: number,
    private readonly logger: Pick<Logger, "warn" | "info">,
  ) {}

  /**
   * Watches the credential a stream was opened with (`authorization`, already authenticated as
   * `credential`, holding `scope`) until the returned function is called; calls `end` once, with the
   * error a new request would get, when it stops opening the stream.
   */
  watch(authorization: string | undefined, credential: Credential, scope: string | undefined, end: (err: GraphQLError) => void): () => void {
    const token = bearerToken(authorization);
    let ended = false;
    const watched: Watched = {
      credential,
      scope,
      end: (err) => {
        if (ended) return;
        ended = true;
        stop();
        end(err);
      },
    };
    let stop: () => void;
    if (looksLikeJwt(token)) {
      this.sessions.set(watched, sessionRefusedAt(token));
      stop = () => this.sessions.delete(watched);
    } else {
      const hash = hashToken(token);
      let entry = this.tokens.get(hash);
      if (!entry) this.tokens.set(hash, (entry = { kind: opaqueKindOf(token), streams: new Set() }));
      entry.streams.add(watched);
      stop = () => {
        entry.streams.delete(watched);
        if (entry.streams.size === 0 && this.tokens.get(hash) === entry) this.tokens.delete(hash);
      };
    }
    this.schedule();
    return () => {
      ended = true;
      stop();
    };
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** One check at a time, and none while nothing is watched. */
  private schedule() {
    if (this.timer || (this.tokens.size === 0 && this.sessions.size === 0)) return;
    this.timer = setTimeout(() => void this.check().finally(() => ((this.timer = undefined), this.schedule())), this.intervalMs);
    this.timer.unref();
  }

  private async check() {
    const now = Date.now();
    for (const [watched, refusedAt] of this.sessions) if (now >= refusedAt) watched.end(unauthorized("session token has expired"));
    if (this.tokens.size === 0) return;
    const asked = [...this.tokens].map(([hash, { kind }]) => ({ hash, kind }));
    let rows;
    try {
      rows = await acrossGroups("credential lookup", () => findTokensByHash(this.db.readerPool, asked));
    } catch (err) {
      if (!this.failing) this.logger.warn({ err }, "open streams' credentials could not be checked; retrying");
      this.failing = true;
      return;
    }
    if (this.failing) this.logger.info("open streams' credentials are checked again");
    this.failing = false;
    for (const { hash, kind } of asked) {
      const entry = this.tokens.get(hash);
      if (!entry) continue; // its streams closed while the statement ran
      for (const watched of [...entry.streams]) {
        const err = refusal(() => credentialOfRow(kind, rows.get(hash)), watched);
        if (err) watched.end(err);
      }
    }
  }
}

/** The error a new stream with this credential would get now, or undefined while it would open. */
function refusal(current: () => Credential, watched: Watched): GraphQLError | undefined {
  let now: Credential;
  try {
    now = current();
  } catch (err) {
    return err as GraphQLError;
  }
  if (watched.scope && !now.scopes.has(watched.scope)) return missingScope(watched.scope);
  const was = watched.credential;
  // The same token now naming another group or property: its open streams' scope is no longer its own.
  if (now.propertyGroupId !== was.propertyGroupId || now.pinnedPropertyId !== was.pinnedPropertyId) {
    return unauthorized("the bearer token's group or property changed; open the stream again");
  }
  return undefined;
}
