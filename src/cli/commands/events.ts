// `gcs events append` (issue 29): the documented way to add events to the log outside the upstream
// systems, for an operator's backfill and the tests (`gcs simulate`, the demo, is commands/simulate.ts).
import { readFileSync } from "node:fs";
import { appendEvents, deltaSizeProblem, groupMembers, groupPropertyIds, MAX_APPEND_EVENTS, onlyGroupId, type NewEvent } from "../../data/stores/event-append";
import type { DataClient } from "../../data/client";
import { jsonDepth, unstorableDetail, unstorablePath } from "../../graphql/text";
import { INSTANT_HINT, instantOf, isUuid } from "../../validate";
import { WEBHOOK_TOPICS } from "../../webhooks/input";
import { cliConfig, printJson, withDatabase } from "../database";

const OPERATIONS = ["create", "update", "delete"] as const;
const MEMBERS = ["entity_type", "entity_id", "operation", "delta", "occurred_at", "guest_profile_id", "property_id", "integration_id"];
/** PostgreSQL parses jsonb recursively: a delta nested thousands deep fails there, so it is held to this. */
const MAX_DELTA_DEPTH = 32;

/** One NDJSON line → an event, or the reason it is not one. Pure: unit-tested. */
export function parseEventLine(line: string, properties: ReadonlySet<string>, now = new Date()): NewEvent | string {
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch {
    return "not JSON";
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) return "not a JSON object";
  const o = v as Record<string, unknown>;
  const unknown = Object.keys(o).filter((k) => !MEMBERS.includes(k));
  if (unknown.length > 0) return `unknown member ${JSON.stringify(unknown[0]).slice(1, -1).slice(0, 100)}; known: ${MEMBERS.join(", ")}`;
  if (!(WEBHOOK_TOPICS as readonly unknown[]).includes(o.entity_type)) return `entity_type must be one of ${WEBHOOK_TOPICS.join(", ")}`;
  if (typeof o.entity_id !== "string" || !isUuid(o.entity_id)) return "entity_id must be a uuid";
  if (!(OPERATIONS as readonly unknown[]).includes(o.operation)) return "operation must be create, update or delete";
  if (o.delta !== undefined && (typeof o.delta !== "object" || o.delta === null || Array.isArray(o.delta))) return "delta must be a JSON object";
  // What PostgreSQL would refuse mid-file is refused here, with the line: NUL and lone surrogates
  // (jsonb cannot hold them), nesting, and the size bound every appender keeps.
  const unstorable = unstorablePath(o.delta, "delta");
  if (unstorable) return unstorableDetail(unstorable);
  if (jsonDepth(o.delta) > MAX_DELTA_DEPTH) return `delta nests deeper than ${MAX_DELTA_DEPTH} levels`;
  const tooLarge = deltaSizeProblem(o.delta);
  if (tooLarge) return tooLarge;
  let occurredAt = now;
  if (o.occurred_at !== undefined) {
    const at = instantOf(o.occurred_at);
    if (!at) return `occurred_at must be ${INSTANT_HINT}`;
    occurredAt = at;
  }
  for (const k of ["guest_profile_id", "property_id", "integration_id"]) {
    if (o[k] !== undefined && o[k] !== null && (typeof o[k] !== "string" || !isUuid(o[k] as string))) return `${k} must be a uuid or null`;
  }
  if (typeof o.property_id === "string" && !properties.has(o.property_id.toLowerCase())) return "property_id is not a property of the group";
  const id = (k: string) => (typeof o[k] === "string" ? (o[k] as string).toLowerCase() : null);
  return {
    entityType: o.entity_type as string,
    entityId: o.entity_id,
    operation: o.operation as NewEvent["operation"],
    delta: o.delta ?? {},
    occurredAt,
    guestProfileId: id("guest_profile_id"),
    propertyId: id("property_id"),
    integrationId: id("integration_id"),
  };
}

async function groupOf(db: DataClient, given?: string): Promise<string> {
  if (given) return given;
  const only = await onlyGroupId(db);
  if (!only) throw new Error("--group is required when the database holds more than one property group");
  return only;
}

/**
 * Every line is validated first, its ids against the group too; one bad line appends nothing (exit 1,
 * each bad line named). Then the whole file is appended in one transaction, in file order: the log
 * is append-only, so a half-applied backfill could not be taken back. A file of more than
 * MAX_APPEND_EVENTS events is refused before anything is read from the database: every timeline
 * waits while the transaction is open, so a larger backfill is appended file by file.
 */
export async function append(opts: { group?: string; file?: string; json?: boolean }): Promise<void> {
  const text = readFileSync(opts.file && opts.file !== "-" ? opts.file : 0, "utf8");
  const events = text.split("\n").filter((line) => line.trim() !== "").length;
  if (events > MAX_APPEND_EVENTS) {
    throw new Error(`the file holds ${events} events; at most ${MAX_APPEND_EVENTS} per append: split the file (nothing appended)`);
  }
  const config = cliConfig();
  const r = await withDatabase(config, true, async (db) => {
    const group = await groupOf(db.primary, opts.group);
    const properties = await groupPropertyIds(db.primary, group);
    if (properties.size === 0) throw new Error(`no property group ${group}`);
    const parsed: { line: number; event: NewEvent }[] = [];
    const errors: string[] = [];
    text.split("\n").forEach((line, i) => {
      if (line.trim() === "") return;
      const e = parseEventLine(line, properties);
      if (typeof e === "string") errors.push(`line ${i + 1}: ${e}`);
      else parsed.push({ line: i + 1, event: e });
    });
    const members = await groupMembers(db.primary, group, {
      guestProfileIds: [...new Set(parsed.flatMap((p) => p.event.guestProfileId ?? []))],
      integrationIds: [...new Set(parsed.flatMap((p) => p.event.integrationId ?? []))],
    });
    for (const { line, event } of parsed) {
      if (event.guestProfileId && !members.guestProfileIds.has(event.guestProfileId)) errors.push(`line ${line}: guest_profile_id is not a guest profile of the group`);
      if (event.integrationId && !members.integrationIds.has(event.integrationId)) errors.push(`line ${line}: integration_id is not an integration of the group`);
    }
    if (errors.length > 0) return { group, appended: 0, errors: errors.sort((a, b) => lineOf(a) - lineOf(b)) };
    const seqs = await appendEvents(db.primary, group, parsed.map((p) => p.event)).catch((err: unknown) => {
      // Validation should leave nothing for PostgreSQL to refuse; if it still does, the transaction
      // rolled back: say so in one line, without the client's text.
      throw new Error(`nothing appended: the database refused the events (${sqlState(err) ?? "no SQLSTATE"}); the transaction was rolled back`);
    });
    return { group, appended: seqs.length, first_seq: seqs[0] ?? null, last_seq: seqs[seqs.length - 1] ?? null, errors };
  });
  if (opts.json) printJson(r);
  else if (r.errors.length === 0) console.log(`appended ${r.appended} events to group ${r.group}`);
  for (const e of r.errors.slice(0, 50)) console.error(e);
  if (r.errors.length > 0) throw new Error(`${new Set(r.errors.map(lineOf)).size} invalid line(s): nothing appended`);
}

const lineOf = (error: string) => Number(/^line (\d+)/.exec(error)![1]);

/** The SQLSTATE of a database error, through Prisma's and its pg adapter's wrappers. */
function sqlState(err: unknown): string | undefined {
  const e = err as { code?: unknown; meta?: { driverAdapterError?: { cause?: { originalCode?: unknown } } } } | undefined;
  const code = e?.meta?.driverAdapterError?.cause?.originalCode ?? e?.code;
  return typeof code === "string" ? code : undefined;
}
