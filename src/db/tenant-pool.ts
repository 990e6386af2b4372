// The pg pool every service statement runs on, carrying the second tenant wall (docs/security.md):
// each statement is preceded, in the same round trip and the same implicit transaction, by
//   SELECT set_config('role', <role>, true), set_config('gcs.group_id', <group>, true)
// for the session db/session.ts holds: gcs_tenant and the caller's group, gcs_system on a documented
// cross-group path, or gcs_tenant with no group (no rows) when neither was said. The two are sent
// as Parse/Bind/Execute before the statement's own messages, with one Sync after both, so they run
// in one implicit transaction: the settings are local to it and gone when the statement ends, the
// same through PgBouncer's transaction pooling and on a read replica. No extra round trip.
// A named statement (data/sql.ts `prepare`: its generic plan was checked at scale) gets a third
// setting, plan_cache_mode = force_generic_plan: PostgreSQL otherwise plans a statement whose LIMIT is
// a parameter afresh on every execution (it estimates the generic plan at a tenth of the table), which
// cost the guests page about 80 µs and the nested GraphQL page about 400 µs of planning per request.
// A request's reads started together (TenantPool.read) share one round trip: one settings statement,
// their statements, one Sync (ReadBatch): one implicit transaction, which a read-only batch can share.
import pg from "pg";
import { serialize } from "pg-protocol";
import { currentSession, inSession } from "./session";
import { isCredentialRefusal, isPoolerPreparedRefusal } from "./errors";
import { currentRecord, inRecord, type CredentialProof, type RequestRecord } from "../observability/request";

export const TENANT_ROLE = "gcs_tenant";
export const CROSS_GROUP_ROLE = "gcs_system";
/** The statement sent before each of the service's own (tests leave it out when they count statements). */
export const SET_SESSION = "SELECT set_config('role', $1, true), set_config('gcs.group_id', $2, true)";
/** The same, before a named statement: its kept (generic) plan, never a plan made afresh per execution. */
export const SET_SESSION_GENERIC = `${SET_SESSION}, set_config('plan_cache_mode', 'force_generic_plan', true)`;
// Before the first statement of a request that authenticated with a remembered credential, the
// settings prove it too (auth/remembered-credentials.ts): the check raises 28000 and the statement
// behind it never runs when the token no longer grants what was remembered.
const CHECK_CREDENTIAL = ", gcs_credential_check($3, $4, $5, $6, $7)";

// Run as sent, as the login role: transaction control (a SET TRANSACTION must come first in its
// transaction, and a failed transaction accepts only ROLLBACK; the statements inside carry their own
// settings), and maintenance that cannot run inside a transaction (VACUUM, by the tables' owner).
// And a call of a credential lookup function (SECURITY DEFINER, owned by gcs_system): it needs no
// settings, and is the one statement of every request that would otherwise pay for them alone.
const CREDENTIAL_LOOKUP = /^SELECT \* FROM gcs_credential_[a-z_]+\(\$1\)$/;
const RUN_AS_SENT = /^\s*(BEGIN|START\s+TRANSACTION|COMMIT|END|ROLLBACK|ABORT|SAVEPOINT|RELEASE|SET\s+TRANSACTION|PREPARE\s+TRANSACTION|VACUUM|ANALYZE|CHECKPOINT)\b/i;

type Callback = (err: Error | null, result?: unknown) => void;

// Each settings statement is prepared once per connection, under its name (SETTINGS): PostgreSQL then binds
// and runs it without parsing and planning it again for every statement. Behind a pooler in
// transaction mode (PgBouncer before 1.21) a connection's prepared statements may be on another
// server connection: the first such refusal (db/errors.ts) turns the name off for this process (as for the read
// paths' statements, db/sql-count.ts) and the query is sent again, unnamed. Nothing had run: the
// settings come first, and a refused statement skips the rest of its round trip. Inside an explicit
// transaction the settings stay unnamed, since a refusal there would abort the caller's transaction.
let namingSettings = true;

/** The two settings statements: before any statement, and before a named one (its generic plan kept). */
const SETTINGS = {
  plain: { name: "gcs_session", text: SET_SESSION },
  generic: { name: "gcs_session_generic", text: SET_SESSION_GENERIC },
  plainChecked: { name: "gcs_session_checked", text: SET_SESSION + CHECK_CREDENTIAL },
  genericChecked: { name: "gcs_session_generic_checked", text: SET_SESSION_GENERIC + CHECK_CREDENTIAL },
} as const;
type Settings = keyof typeof SETTINGS;

// The settings' messages, made once per statement, form, role and group: the same bytes pg would serialise.
const EXECUTE = serialize.execute({ portal: "", rows: 0 });
type SettingsForm = "parseNamed" | "named" | "unnamed";
const MAX_CACHED_SESSIONS = 10_000;
const sessionBytes = new Map<string, Buffer>();
// A checked statement's bytes also hold the credential's values: they are kept with the remembered
// credential (CredentialProof.settingsBytes), under the same short key, not built into a long one.
function sessionMessages(settings: Settings, form: SettingsForm, values: readonly (string | null)[], cache = sessionBytes): Buffer {
  const key = `${settings}:${form}:${values[0]}:${values[1]}`;
  let bytes = cache.get(key);
  if (!bytes) {
    if (cache.size >= MAX_CACHED_SESSIONS) cache.clear();
    const { name, text } = SETTINGS[settings];
    const statement = form === "unnamed" ? "" : name;
    const bind = serialize.bind({ portal: "", statement, values: values as (string | null)[], valueMapper: (v: unknown) => v });
    const parse = form === "named" ? [] : [serialize.parse({ text, name: statement, types: [] })];
    cache.set(key, (bytes = Buffer.concat([...parse, bind, EXECUTE])));
  }
  return bytes;
}

// pg's Query is a class whose protocol steps can be extended; its typings do not declare them.
interface QuerySteps {
  name?: string;
  text: string;
  values?: unknown[];
  portal: string;
  rows?: number;
  callback?: Callback;
  _rowMode?: "array";
  _result: ResultSteps;
  _results: unknown;
  _accumulateRows: boolean;
  listeners(event: string): unknown[];
  requiresPreparation(): boolean;
  prepare(connection: { stream: { write(b: Buffer): boolean } }): void;
  handleRowDescription(msg: { fields: unknown[] }): void;
  handleDataRow(msg: unknown): void;
  handleCommandComplete(msg: unknown, connection: unknown): void;
  handleError(err: Error, connection: unknown): void;
  handleReadyForQuery(connection: unknown): void;
  _getRows(connection: PgConnection, rows?: number): void;
}
/** The parts of pg's Connection a batch of reads writes with. */
interface PgConnection {
  stream: { write(b: Buffer): boolean; cork(): void; uncork(): void };
  parsedStatements: Record<string, string>;
  submittedNamedStatements: Record<string, string>;
  execute(config: { portal: string; rows?: number }): void;
  sync(): void;
}
/** pg's Result, as far as a described statement's columns go. */
interface ResultSteps {
  fields: unknown[];
  _parsers?: unknown[];
  command: string | null;
}
// pg's own mapping of a value to a parameter (it has no typings of its own).
const { prepareValue } = require("pg/lib/utils") as { prepareValue(value: unknown): unknown };
const Query = (pg as unknown as { Query: new (config: unknown, values?: unknown, callback?: Callback) => QuerySteps }).Query;
const Result = new Query({ text: "" })._result.constructor as new (rowMode?: string, types?: unknown) => ResultSteps;

/** The query configs statements are sent with here; pg takes others too (Prisma's, with `types`). */
interface StatementConfig {
  text: string;
  values?: unknown[];
  name?: string;
  rowMode?: "array";
}
const PLAIN_KEYS = new Set(["text", "values", "name", "rowMode"]);
/** A config of no more than a statement's text, values, name and row mode. */
function isPlain(config: unknown): config is StatementConfig {
  if (config === null || typeof config !== "object" || Object.getPrototypeOf(config) !== Object.prototype) return false;
  for (const key in config) if (!PLAIN_KEYS.has(key)) return false;
  return typeof (config as StatementConfig).text === "string";
}

// A prepared statement describes the same columns on every execution: their parsers are made once per
// process, where pg's Result.addFields makes them again for each (about 4 µs a statement of 15 columns).
const MAX_DESCRIBED = 1000;
const described = new Map<string, { fields: unknown[]; parsers?: unknown[] }>();

/** pg's Query for one of the service's statements, with two costs taken out (see each). */
class StatementQuery extends Query {
  constructor(config: unknown, values?: unknown, callback?: Callback) {
    // pg copies a config object through its property descriptors (about 2 µs a statement): a plain one
    // goes as its text, and what else it says is set here as pg's constructor would.
    const plain = isPlain(config);
    super(plain ? config.text : config, plain ? (values ?? config.values) : values, callback);
    if (plain) {
      if (config.name) this.name = config.name;
      if (config.rowMode) {
        this._rowMode = config.rowMode;
        this._result = this._results = new Result(config.rowMode);
      }
    }
  }
  override handleRowDescription(msg: { fields: unknown[] }) {
    if (!this.name || this._rowMode !== "array" || this._result.command) return super.handleRowDescription(msg);
    const known = described.get(this.name);
    if (!known) {
      super.handleRowDescription(msg);
      if (described.size < MAX_DESCRIBED) described.set(this.name, { fields: this._result.fields, parsers: this._result._parsers });
      return;
    }
    this._result.fields = known.fields;
    this._result._parsers = known.parsers;
    this._accumulateRows = Boolean(this.callback) || !this.listeners("row").length;
  }
}

/** Which settings statement goes before a statement: named ones keep their generic plan; a credential to prove adds its check. */
function settingsKindOf(named: boolean, settings: readonly unknown[]): Settings {
  return named ? (settings.length > 2 ? "genericChecked" : "generic") : settings.length > 2 ? "plainChecked" : "plain";
}

/** The settings of a statement run now: the session's role and group, and the credential the request still has to prove. */
function currentSettings(): { settings: (string | null)[]; record: RequestRecord | undefined; proof: CredentialProof | undefined } {
  const session = currentSession();
  const settings: (string | null)[] =
    session && "crossGroup" in session ? [CROSS_GROUP_ROLE, ""] : [TENANT_ROLE, session && "groupId" in session ? session.groupId : ""];
  const record = currentRecord();
  const proof = record?.credentialToProve;
  if (proof) settings.push(proof.kind, proof.hash, proof.id, proof.propertyId, proof.scopeText);
  return { settings, record, proof };
}

/**
 * Writes the settings statement of `kind` (SessionQuery, ReadBatch): by name where this connection holds
 * it prepared, parsed by name where naming is on, else unnamed. Whether it went by name, and whether its
 * ParseComplete is still to come. A name is taken for prepared once its Parse is written, as pg does for a
 * statement's own; a failed Parse forgets it (TenantClient.submit, ReadBatch.handleError).
 */
function writeSettings(
  client: TenantClient,
  kind: Settings,
  settings: readonly (string | null)[],
  bytes: Map<string, Buffer> | undefined,
  stream: { write(b: Buffer): boolean },
): { named: boolean; parsePending: boolean } {
  const named = namingSettings && client.idle();
  const form: SettingsForm = !named ? "unnamed" : client.settingsPrepared.has(kind) ? "named" : "parseNamed";
  if (form === "parseNamed") client.settingsPrepared.add(kind);
  stream.write(sessionMessages(kind, form, settings, bytes));
  return { named, parsePending: form !== "named" };
}

/** A query that first sets the session's role and group, in the same implicit transaction. */
class SessionQuery extends StatementQuery {
  private settingsPending = true;
  /** The settings' own ParseComplete is still to come (TenantClient consumes it, see there). */
  settingsParsePending = false;
  /** The settings went by name: a pooler's refusal of the name may be retried unnamed. */
  namedSettings = false;
  /** Which settings statement goes before this one. */
  readonly settingsKind: Settings;
  constructor(
    private readonly client: TenantClient,
    /** role and group, then the credential check's kind, hash, id, pinned property and scopes when there is one. */
    private readonly settings: readonly (string | null)[],
    /** Where the settings' bytes are kept: the remembered credential's own map for a checked statement. */
    private readonly settingsBytes: Map<string, Buffer> | undefined,
    config: { name?: string },
    values?: unknown,
    callback?: Callback,
  ) {
    super(config, values, callback);
    this.settingsKind = settingsKindOf(Boolean(config.name), settings);
  }
  override requiresPreparation() {
    return true;
  }
  override prepare(connection: { stream: { write(b: Buffer): boolean } }) {
    ({ named: this.namedSettings, parsePending: this.settingsParsePending } = writeSettings(this.client, this.settingsKind, this.settings, this.settingsBytes, connection.stream));
    super.prepare(connection);
  }
  // The settings statement answers one row and its completion before the statement's own.
  override handleDataRow(msg: unknown) {
    if (!this.settingsPending) super.handleDataRow(msg);
  }
  override handleCommandComplete(msg: unknown, connection: unknown) {
    if (this.settingsPending) this.settingsPending = false;
    else super.handleCommandComplete(msg, connection);
  }
  /** Whether `err` is a pooler refusing the settings' name (before anything ran). */
  refusedByPooler(err: Error) {
    return this.settingsPending && this.namedSettings && isPoolerPreparedRefusal(err);
  }
}

interface TenantPoolConfig extends pg.PoolConfig {
  /** false: every read takes its own connection and write (TenantPool.read); default true. */
  pipelineReads?: boolean;
  /** false: statements run as the login role, with no settings (the benchmark's A/B only). */
  rowSecurity?: boolean;
  /** Remember looked-up credentials (auth/remembered-credentials.ts); needs rowSecurity, whose settings prove them. */
  rememberCredentials?: boolean;
  /**
   * Where statements on a cross-group path go (db/session.ts acrossGroups): a pool logged in as a
   * member of gcs_system (DATABASE_SYSTEM_URL), so that this pool's login need not be one. Unset: here.
   */
  crossGroupPool?: pg.Pool;
}

class TenantClient extends pg.Client {
  readonly rowSecurity: boolean;
  /** The settings statements this connection holds prepared (SETTINGS). */
  readonly settingsPrepared = new Set<Settings>();
  constructor(config: TenantPoolConfig) {
    super(config);
    this.rowSecurity = config.rowSecurity !== false;
  }
  /** Outside any explicit transaction (pg keeps the status of the last ReadyForQuery). */
  idle() {
    return (this as unknown as { _txStatus: string | null })._txStatus === "I";
  }
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  override query(config: any, values?: any, callback?: any): any {
    if (!this.rowSecurity || config == null || typeof config.submit === "function") return super.query(config, values, callback);
    const text: unknown = typeof config === "string" ? config : config.text;
    if (typeof text !== "string" || RUN_AS_SENT.test(text) || CREDENTIAL_LOOKUP.test(text)) return super.query(config, values, callback);
    const { settings, record, proof } = currentSettings();
    if (typeof values === "function") [values, callback] = [undefined, values];
    const answer = (cb: Callback): Callback => (proof ? provingAnswer(record!, proof, cb) : cb);
    if (callback) {
      this.submit(settings, proof, config, values, answer(callback));
      return undefined;
    }
    return new Promise((resolve, reject) => this.submit(settings, proof, config, values, answer((err, result) => (err ? reject(err) : resolve(result)))));
  }
  private submit(settings: readonly (string | null)[], proof: CredentialProof | undefined, config: unknown, values: unknown, callback: Callback) {
    const query: SessionQuery = new SessionQuery(this, settings, proof?.settingsBytes, config as { name?: string }, values, (err, result) => {
      if (err && query.settingsParsePending && query.namedSettings) this.settingsPrepared.delete(query.settingsKind);
      if (!err || !query.refusedByPooler(err)) return callback(err, result);
      namingSettings = false;
      this.settingsPrepared.clear();
      this.submit(settings, proof, config, values, callback);
    });
    super.query(query as never);
  }
  // The settings' ParseComplete is theirs: pg would credit it to the statement behind them, and
  // take that statement for prepared on this connection even when its own Parse then failed.
  _handleParseComplete() {
    const active = (this as unknown as { _getActiveQuery(): unknown })._getActiveQuery();
    if (active instanceof SessionQuery && active.settingsParsePending) {
      active.settingsParsePending = false;
      return;
    }
    if (active instanceof ReadBatch) return active.handleParseComplete();
    (pg.Client.prototype as unknown as { _handleParseComplete(this: pg.Client): void })._handleParseComplete.call(this);
  }
}

/** A statement of a ReadBatch: its messages without a Sync (the batch sends one after the last). */
class BatchedQuery extends StatementQuery {
  override _getRows(connection: PgConnection) {
    connection.execute({ portal: this.portal, rows: this.rows });
  }
}

/**
 * Reads sent in one round trip (TenantPool.read): one settings statement, then each read's
 * Parse (when its name is new here)/Bind/Describe/Execute, then one Sync. One implicit transaction
 * holds them all, so the settings are sent and run once. They are reads, so the transaction's fate is
 * theirs only: a read that fails gets its error, and PostgreSQL skips the rest up to the Sync, so those
 * are sent again, each on its own (`retry`), as they would have gone. A failure of the settings (a
 * pooler refusing their name, a credential refused) goes to every read the same way.
 */
class ReadBatch {
  private readonly queries: BatchedQuery[];
  /** The read being answered; -1 while the settings are. */
  private answering: number;
  private settingsParsePending = false;
  private namedSettings = false;
  private done = false;
  constructor(
    private readonly client: TenantClient,
    private readonly reads: PendingRead[],
    private readonly kind: Settings,
    private readonly settings: readonly (string | null)[],
    private readonly record: RequestRecord,
    private readonly proof: CredentialProof | undefined,
    /** Sends a read again on its own, as TenantPool.query would have. */
    private readonly retry: (read: PendingRead) => void,
    /** Called once, when the batch no longer needs its connection. */
    private readonly finished: (err?: Error) => void,
  ) {
    this.answering = client.rowSecurity ? -1 : 0;
    this.queries = reads.map((read, i) => new BatchedQuery(read.config, undefined, (err: Error | null, result?: unknown) => this.answered(i, err, result)));
  }
  submit(connection: PgConnection): null {
    connection.stream.cork();
    try {
      if (this.client.rowSecurity) {
        ({ named: this.namedSettings, parsePending: this.settingsParsePending } = writeSettings(this.client, this.kind, this.settings, this.proof?.settingsBytes, connection.stream));
      }
      for (const query of this.queries) query.prepare(connection as never);
      connection.sync();
    } finally {
      connection.stream.uncork();
    }
    return null;
  }
  handleParseComplete() {
    if (this.answering < 0 && this.settingsParsePending) {
      this.settingsParsePending = false;
      return;
    }
    const query = this.queries[this.answering];
    if (query?.name) {
      const connection = (this.client as unknown as { connection: PgConnection }).connection;
      connection.parsedStatements[query.name] = query.text;
      delete connection.submittedNamedStatements[query.name];
    }
  }
  handleRowDescription(msg: { fields: unknown[] }) {
    this.queries[this.answering]?.handleRowDescription(msg);
  }
  handleDataRow(msg: unknown) {
    if (this.answering >= 0) this.queries[this.answering]?.handleDataRow(msg);
  }
  handleCommandComplete(msg: unknown, connection: unknown) {
    if (this.answering < 0) {
      this.answering = 0;
      // The settings ran, the credential check with them: proved for the rest of the request.
      if (this.proof && this.record.credentialToProve === this.proof) this.record.credentialToProve = undefined;
      return;
    }
    const i = this.answering++;
    const query = this.queries[i];
    query.handleCommandComplete(msg, connection);
    query.handleReadyForQuery(connection);
    this.release(i);
  }
  /** An answered read is its caller's: the batch lets go of it (its rows would otherwise live as long as the batch). */
  private release(i: number) {
    (this.queries as (BatchedQuery | undefined)[])[i] = undefined;
  }
  handleEmptyQuery() {
    const i = this.answering++;
    this.queries[i]?.handleReadyForQuery((this.client as unknown as { connection: unknown }).connection);
    this.release(i);
  }
  handlePortalSuspended() {}
  handleCopyInResponse() {}
  handleCopyData() {}
  handleError(err: Error) {
    const connection = (this.client as unknown as { connection: PgConnection }).connection;
    // Names whose Parse was written but never answered are not prepared here.
    for (const query of this.queries.slice(Math.max(this.answering, 0))) {
      if (query?.name && connection.parsedStatements[query.name] === undefined) delete connection.submittedNamedStatements[query.name];
    }
    if (this.answering < 0) {
      if (this.settingsParsePending && this.namedSettings) this.client.settingsPrepared.delete(this.kind);
      const refusedName = this.namedSettings && isPoolerPreparedRefusal(err);
      if (refusedName) {
        namingSettings = false;
        this.client.settingsPrepared.clear();
      }
      if (this.proof && isCredentialRefusal(err)) this.proof.refused();
      this.reads.forEach((read, i) => (refusedName ? this.retry(read) : this.queries[i].handleError(err, connection)));
    } else {
      this.queries[this.answering].handleError(err, connection);
      for (const read of this.reads.slice(this.answering + 1)) this.retry(read);
    }
    this.finish(err);
  }
  handleReadyForQuery() {
    // Every read answered at its CommandComplete; one left unanswered would be a protocol surprise.
    for (const read of this.reads.slice(this.answering)) this.retry(read);
    this.finish();
  }
  private answered(i: number, err: Error | null, result: unknown) {
    const read = this.reads[i];
    if (err) read.reject(err);
    else read.resolve(result as pg.QueryResult);
  }
  private finish(err?: Error) {
    if (this.done) return;
    this.done = true;
    this.finished(err);
  }
}

/** What TenantPool.read takes: pg's query config (a read's own statement). */
export type ReadConfig = { text: string; values?: unknown[]; name?: string; rowMode?: "array" };

interface PendingRead {
  config: ReadConfig;
  record: RequestRecord;
  session: ReturnType<typeof currentSession>;
  resolve: (result: pg.QueryResult) => void;
  reject: (err: Error) => void;
}

/** Whether pg could fail to turn a value into a parameter (only objects: arrays, dates, JSON). */
function unserialisable(value: unknown): boolean {
  if (value === null || typeof value !== "object") return false;
  try {
    prepareValue(value);
    return false;
  } catch {
    return true;
  }
}

/** A read statement on `pool`: TenantPool.read on the service's pools, else the pool's own query (a transaction's client). */
export function readOn(pool: pg.Pool, config: ReadConfig): Promise<pg.QueryResult> {
  return pool instanceof TenantPool ? pool.read(config) : pool.query(config as pg.QueryConfig);
}

/** A statement that carried the credential check: its success proves it for the rest of the request, its refusal forgets it. */
function provingAnswer(record: RequestRecord, proof: CredentialProof, callback: Callback): Callback {
  return (err, result) => {
    if (!err && record.credentialToProve === proof) record.credentialToProve = undefined;
    else if (err && isCredentialRefusal(err)) proof.refused();
    callback(err, result);
  };
}

/**
 * A pg Pool of TenantClients. A callback waiting for a free connection is run by whichever request
 * releases one: it is run here in its own caller's session and request record. The record carries
 * the credential a statement proves (auth/remembered-credentials.ts): run in the releaser's, a
 * waiting statement would prove the other request's credential, or none. (Not AsyncResource.bind:
 * a resource per statement, tracked until collected, cost the guests page 400 µs of CPU per request
 * at 1M guests.)
 */
export class TenantPool extends pg.Pool {
  private readonly crossGroupPool?: pg.Pool;
  private readonly pipelineReads: boolean;
  /** Each request's reads of this turn of the event loop, sent together when it ends (read). */
  private readonly waitingReads = new Map<RequestRecord, PendingRead[]>();
  /**
   * Whether credentials looked up through this pool may be remembered (auth/remembered-credentials.ts):
   * the settings prove them, so never with the wall off.
   */
  readonly provesCredentials: boolean;
  constructor(config: TenantPoolConfig) {
    super({ ...config, Client: TenantClient } as unknown as pg.PoolConfig);
    this.crossGroupPool = config.crossGroupPool;
    this.provesCredentials = config.rowSecurity !== false && config.rememberCredentials === true;
    this.pipelineReads = config.pipelineReads !== false;
  }

  /**
   * A read statement (data/sql.ts's read paths; nothing that writes). A request's reads started in one
   * turn of the event loop (its sections, a DataLoader's batches) go out together: one connection, one
   * write, one settings statement and one Sync for them all (ReadBatch), where each took its own. Each
   * still gets its own rows or its own error. A read alone in its turn goes as before.
   */
  read(config: ReadConfig): Promise<pg.QueryResult> {
    const record = currentRecord();
    const session = currentSession();
    const crossGroup = this.crossGroupPool && session && "crossGroup" in session;
    if (!this.pipelineReads || !record || crossGroup || RUN_AS_SENT.test(config.text) || CREDENTIAL_LOOKUP.test(config.text)) {
      return this.query(config as pg.QueryConfig);
    }
    const batch = this.waitingReads.get(record);
    if (batch) return new Promise((resolve, reject) => batch.push({ config, record, session, resolve, reject }));
    const reads: PendingRead[] = [];
    this.waitingReads.set(record, reads);
    const send = () => {
      this.waitingReads.delete(record);
      this.sendReads(record, reads);
    };
    // Sent two ticks on: a DataLoader dispatches its batch in a tick queued from a microtask of this
    // turn, so the second tick comes behind it and its reads go too. (setImmediate catches them as
    // well, but cost about 300 µs of CPU per request on the guests page: measured, cause not found.)
    process.nextTick(() => process.nextTick(send));
    return new Promise((resolve, reject) => reads.push({ config, record, session, resolve, reject }));
  }

  /** A read on its own: TenantPool.query in the read's own request and session. */
  private alone = (read: PendingRead) => {
    inRecord(read.record, () => inSession(read.session, () => this.query(read.config as pg.QueryConfig))).then(read.resolve, read.reject);
  };

  /** One turn's reads: those with the same settings in one batch each (one, unless a request reads as two groups). */
  private sendReads(record: RequestRecord, reads: PendingRead[]) {
    if (reads.length === 1) return this.alone(reads[0]);
    const batches = new Map<string, { reads: PendingRead[]; kind: Settings; settings: (string | null)[]; proof: CredentialProof | undefined }>();
    for (const read of reads) {
      // A value pg could fail to serialise would fail mid-batch: such a read goes on its own.
      if (read.config.values?.some(unserialisable)) {
        this.alone(read);
        continue;
      }
      const { settings, proof } = inSession(read.session, () => inRecord(record, currentSettings));
      const kind = settingsKindOf(Boolean(read.config.name), settings);
      const key = `${kind}:${settings[0]}:${settings[1]}`;
      const batch = batches.get(key);
      if (batch) batch.reads.push(read);
      else batches.set(key, { reads: [read], kind, settings, proof });
    }
    for (const { reads: together, kind, settings, proof } of batches.values()) {
      if (together.length === 1) {
        this.alone(together[0]);
        continue;
      }
      inRecord(record, () => this.connect()).then(
        (client: pg.PoolClient) => {
          const batch = new ReadBatch(client as unknown as TenantClient, together, kind, settings, record, proof, this.alone, (err) => client.release(err));
          client.query(batch as never);
        },
        (err: Error) => {
          for (const read of together) read.reject(err);
        },
      );
    }
  }
  // Every statement and transaction takes its connection here (pg's Pool.query too), in its caller's
  // session: a cross-group one from the cross-group pool, when there is one.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  override connect(callback?: any): any {
    const session = currentSession();
    if (this.crossGroupPool && session && "crossGroup" in session) return this.crossGroupPool.connect(callback);
    if (!callback) return super.connect();
    const record = currentRecord();
    return super.connect((...args: unknown[]) => inRecord(record, () => inSession(session, () => callback(...args))));
  }
}
