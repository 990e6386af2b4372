// `gcs events append` (issue 29): the documented way to add events to the log outside the upstream
// systems, for an operator's backfill and the tests (`gcs simulate`, the demo, is commands/simulate.ts).
import { readFileSync } from "node:fs";
import { appendEvents, groupPropertyIds, onlyGroupId, type NewEvent } from "../../data/stores/event-append";
import type { DataClient } from "../../data/client";
import { isUuid } from "../../validate";
import { WEBHOOK_TOPICS } from "../../webhooks/input";
import { cliConfig, printJson, withDatabase } from "../database";

const OPERATIONS = ["create", "update", "delete"] as const;
const BATCH = 500;
const MEMBERS = ["entity_type", "entity_id", "operation", "delta", "occurred_at", "guest_profile_id", "property_id", "integration_id"];

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
  if (unknown.length > 0) return `unknown member ${unknown[0]}; known: ${MEMBERS.join(", ")}`;
  if (!(WEBHOOK_TOPICS as readonly unknown[]).includes(o.entity_type)) return `entity_type must be one of ${WEBHOOK_TOPICS.join(", ")}`;
  if (typeof o.entity_id !== "string" || !isUuid(o.entity_id)) return "entity_id must be a uuid";
  if (!(OPERATIONS as readonly unknown[]).includes(o.operation)) return "operation must be create, update or delete";
  if (o.delta !== undefined && (typeof o.delta !== "object" || o.delta === null || Array.isArray(o.delta))) return "delta must be a JSON object";
  let occurredAt = now;
  if (o.occurred_at !== undefined) {
    if (typeof o.occurred_at !== "string" || !/^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)$/.test(o.occurred_at) || Number.isNaN(Date.parse(o.occurred_at))) {
      return "occurred_at must be an ISO 8601 instant with a zone, e.g. 2026-11-27T09:30:00Z";
    }
    occurredAt = new Date(o.occurred_at);
  }
  for (const k of ["guest_profile_id", "property_id", "integration_id"]) {
    if (o[k] !== undefined && o[k] !== null && (typeof o[k] !== "string" || !isUuid(o[k] as string))) return `${k} must be a uuid or null`;
  }
  if (typeof o.property_id === "string" && !properties.has(o.property_id.toLowerCase())) return "property_id is not a property of the group";
  return {
    entityType: o.entity_type as string,
    entityId: o.entity_id,
    operation: o.operation as NewEvent["operation"],
    delta: o.delta ?? {},
    occurredAt,
    guestProfileId: (o.guest_profile_id as string | undefined) ?? null,
    propertyId: typeof o.property_id === "string" ? o.property_id.toLowerCase() : null,
    integrationId: (o.integration_id as string | undefined) ?? null,
  };
}

async function groupOf(db: DataClient, given?: string): Promise<string> {
  if (given) return given;
  const only = await onlyGroupId(db);
  if (!only) throw new Error("--group is required when the database holds more than one property group");
  return only;
}

/**
 * Every line is validated first; one bad line appends nothing (exit 1, each bad line named). Then
 * the events are appended in file order, 500 per statement.
 */
export async function append(opts: { group?: string; file?: string; json?: boolean }): Promise<void> {
  const text = readFileSync(opts.file && opts.file !== "-" ? opts.file : 0, "utf8");
  const config = cliConfig();
  const r = await withDatabase(config, true, async (db) => {
    const group = await groupOf(db.primary, opts.group);
    const properties = await groupPropertyIds(db.primary, group);
    if (properties.size === 0) throw new Error(`no property group ${group}`);
    const events: NewEvent[] = [];
    const errors: string[] = [];
    text.split("\n").forEach((line, i) => {
      if (line.trim() === "") return;
      const e = parseEventLine(line, properties);
      if (typeof e === "string") errors.push(`line ${i + 1}: ${e}`);
      else events.push(e);
    });
    if (errors.length > 0) return { group, appended: 0, errors };
    const seqs: string[] = [];
    for (let i = 0; i < events.length; i += BATCH) seqs.push(...(await appendEvents(db.primary, group, events.slice(i, i + BATCH))));
    return { group, appended: seqs.length, first_seq: seqs[0] ?? null, last_seq: seqs[seqs.length - 1] ?? null, errors };
  });
  if (opts.json) printJson(r);
  else if (r.errors.length === 0) console.log(`appended ${r.appended} events to group ${r.group}`);
  for (const e of r.errors.slice(0, 50)) console.error(e);
  if (r.errors.length > 0) throw new Error(`${r.errors.length} invalid line(s): nothing appended`);
}
