// Tenant isolation as the database sees it. A PostgreSQL of this file's own logs every statement
// (log_statement = all) and the real app runs on it. One request at a time, as group A's API key, its
// web-app session, its key pinned to one property and its key narrowed by X-Property-Id, the test
// calls every route of the route table, every Query and Mutation root field of schema.graphql and the
// MCP task tools (and, once per kind of scope, each route's filters one at a time and its second
// page). After each request it cuts the log at a marker statement and holds every statement that
// touches a tenant table to the caller's group predicate (and property, for a narrowed caller):
// property_group_id compared with the group's uuid, as a literal or a bound parameter
// (test/helpers/tenant-isolation.ts, with its short allow-list).
// It depends on behaviour only (HTTP in, SQL out), so it keeps holding whichever layer writes the SQL.
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import {
  buildSchema,
  getNamedType,
  isInterfaceType,
  isLeafType,
  isNonNullType,
  isObjectType,
  isUnionType,
  Kind,
  type GraphQLField,
  type GraphQLNamedType,
  type GraphQLObjectType,
} from "graphql";
import { Client } from "pg";
import { deliverySecretKey } from "../../src/delivery/run";
import { seal, type Keyring } from "../../src/delivery/secret-box";
import type { FixtureManifest } from "../../src/fixtures";
import { UNBOUND_FILTER } from "../../src/fixtures/tables";
import { taskTools } from "../../src/api/tools/task-tools";
import { routes, type RouteSpec } from "../../src/api/routes";
import { leaveOutApplicationPredicateForTests, tenantSql } from "../../src/data/tenant";
import { startAppOn, type TestApp } from "../helpers/app";
import { startOwnPostgres } from "../helpers/own-postgres";
import { startPgBouncer, type TestPgBouncer } from "../helpers/pgbouncer";
import type { TestPostgres } from "../helpers/postgres";
import { LOG_LINE_PREFIX, StatementLog, type LoggedStatement } from "../helpers/statement-log";
import { checkStatement, readTenantTables, type Caller, type TenantTables } from "../helpers/tenant-isolation";

const schema = buildSchema(readFileSync(path.resolve(__dirname, "../../schema.graphql"), "utf8"));
/** Object levels a root field's selection reaches (the page, its nodes, their relations, theirs). */
const SELECTION_DEPTH = 4;
const MARKER_APPLICATION = "gcs-isolation-markers";

let pg: TestPostgres;
let manifest: FixtureManifest;
let t: TestApp;
let markers: Client;
let log: StatementLog;
let tenant: TenantTables;
let keyring: Keyring;
let bouncer: TestPgBouncer | undefined;

beforeAll(async () => {
  ({ pg, manifest } = await startOwnPostgres());
  markers = new Client({ connectionString: pg.adminUrl(), application_name: MARKER_APPLICATION });
  await markers.connect();
  tenant = await readTenantTables(markers);
  // After the fixtures are loaded: the log holds only what the app sends from here on.
  await markers.query("ALTER SYSTEM SET log_statement = 'all'");
  await markers.query(`ALTER SYSTEM SET log_line_prefix = '${LOG_LINE_PREFIX}'`);
  await markers.query("SELECT pg_reload_conf()");
  log = new StatementLog(pg.logFile, markers, MARKER_APPLICATION);
  // Bounds on /graphql operations out of the way: the selections below are wide on purpose.
  // npm run test:pgbouncer: the app reaches this file's own server through PgBouncer in transaction
  // mode, so both walls are checked there too; the log is the server's either way.
  if (process.env.GCS_TEST_PGBOUNCER === "1") bouncer = await startPgBouncer(pg.adminUrl());
  t = await startAppOn(bouncer ? bouncer.url(new URL(pg.adminUrl()).pathname.slice(1)) : pg.adminUrl(), manifest, {
    GCS_GRAPHQL_MAX_DEPTH: "20",
    GCS_GRAPHQL_MAX_COST: "100000000",
    GCS_GRAPHQL_MAX_SELECTIONS: "1000000",
    GCS_GRAPHQL_MAX_TOKENS: "1000000",
    // Webhook endpoints on 127.0.0.1 (a test ping finds nothing listening there and says so).
    GCS_WEBHOOKS_ALLOW_PRIVATE: "true",
  });
  keyring = await deliverySecretKey(t.services.config, t.db.primary); // seals the webhook endpoints' secrets
  await log.window(); // start-up's statements (migrations, secrets) are no request's
}, 180_000);

afterAll(async () => {
  await t?.close();
  bouncer?.stop();
  log?.close();
  await markers?.end();
  pg?.stop();
});

const A = () => manifest.groups.A;

interface Pass {
  name: string;
  token: () => string;
  caller: () => Caller;
  /** X-Property-Id, narrowing the request to one property. */
  propertyHeader?: () => string;
  /** MCP takes no web-app sessions (it has its own connector tokens). */
  mcp: boolean;
  /** Also every filter and the second page of each route: once per kind of scope (whole group, one property). */
  variants: boolean;
}

const PASSES: Pass[] = [
  { name: "group A's API key", token: () => A().credentials.api_key, caller: () => ({ groupId: A().id, propertyId: null }), mcp: true, variants: true },
  {
    name: "group A's web-app session",
    token: () => A().credentials.session_token,
    caller: () => ({ groupId: A().id, propertyId: null }),
    mcp: false,
    variants: false,
  },
  {
    name: "group A's key pinned to a property",
    token: () => A().credentials.api_key_pinned.token,
    caller: () => ({ groupId: A().id, propertyId: A().credentials.api_key_pinned.property_id }),
    mcp: true,
    variants: true,
  },
  {
    name: "group A's API key narrowed by X-Property-Id",
    token: () => A().credentials.api_key,
    propertyHeader: () => A().properties[0],
    caller: () => ({ groupId: A().id, propertyId: A().properties[0] }),
    mcp: true,
    variants: false,
  },
];

// What the sweep saw, across passes.
const tally = { requests: 0, statements: 0, tenantStatements: 0, narrowed: 0, exempted: new Map<string, number>() };
const answered = new Map<string, Set<string>>(); // target → passes it answered
const findings: string[] = [];

const oneLine = (s: LoggedStatement) =>
  `${s.text.replace(/\s+/g, " ").slice(0, 400)}${s.params.length ? ` [${s.params.slice(1).map((p) => JSON.stringify(p)).join(", ")}]` : ""}`;

/**
 * Set while the application predicate is left out (the second wall alone, below): each answer is then
 * searched for the ids of group B's rows instead of each statement for the predicate.
 */
let secondWallOnly: { foreignIds: Set<string>; answers: number } | undefined;
const UUIDS = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;

/** Runs one request and checks the statements it issued (everything logged until the next marker). */
async function observe<T>(pass: Pass, target: string, request: () => PromiseLike<T>): Promise<T> {
  const result = await request();
  const statements = await log.window();
  if (secondWallOnly) {
    const { body, text } = result as { body?: unknown; text?: string };
    const answer = text ?? JSON.stringify(body);
    const foreign = [...new Set(answer.match(UUIDS) ?? [])].filter((id) => secondWallOnly!.foreignIds.has(id.toLowerCase()));
    if (foreign.length > 0) findings.push(`${pass.name}, ${target}: group B's ${foreign.slice(0, 3).join(", ")} in the answer`);
    secondWallOnly.answers++;
    return result;
  }
  tally.requests++;
  // Every request at least authenticates: a window without statements means the log is not on.
  if (statements.length === 0) throw new Error(`${target}: no statement was logged`);
  for (const s of statements) {
    const verdict = checkStatement(s, pass.caller(), tenant);
    tally.statements++;
    if (verdict.tables.length > 0) tally.tenantStatements++;
    if (verdict.narrowed) tally.narrowed++;
    if (verdict.exemptedBy) tally.exempted.set(verdict.exemptedBy, (tally.exempted.get(verdict.exemptedBy) ?? 0) + 1);
    if (verdict.missing) findings.push(`${pass.name}, ${target}: no ${verdict.missing} predicate on ${verdict.tables.join(", ")}: ${oneLine(s)}`);
  }
  return result;
}

/** What a pass calls with: its scopes, and ids it can see. */
interface Samples {
  scopes: Set<string>;
  /** REST collection path → the id of a row in it. */
  rows: Map<string, string>;
  /** GraphQL type → the id of one it can see. */
  ids: Map<string, string>;
  /** otherGuestId: another guest profile of the same master profile in scope (else guestId itself). */
  person: { guestId: string; otherGuestId: string; name: string; email: string; masterProfileId: string };
  /** The caller's property, or one of the group's. */
  property: string;
  provider: string;
  /** Webhook endpoints the pass may delete (REST, then GraphQL): the sampled one stays for the other calls. */
  spareEndpoints: string[];
}

const WEBHOOK_URL = "http://127.0.0.1:9/isolation";

/** A webhook endpoint the pass sees (a narrowed caller sees only its property's), written outside the log. */
async function webhookEndpointFor(pass: Pass): Promise<string> {
  const property = pass.caller().propertyId;
  const id = randomUUID();
  // Sealed as the service seals (the test ping opens it), under the endpoint's id.
  const sealed = seal("whsec_isolation", id, keyring);
  await markers.query(
    `INSERT INTO webhook_endpoints (id, property_group_id, url, topics, property_ids, secret_ciphertext)
     VALUES ($1::uuid, $2::uuid, $3, '{*}', $4::uuid[], $5)`,
    [id, A().id, WEBHOOK_URL, property ? [property] : [], sealed],
  );
  return id;
}

const bearer = (pass: Pass): Record<string, string> => ({
  Authorization: `Bearer ${pass.token()}`,
  ...(pass.propertyHeader ? { "X-Property-Id": pass.propertyHeader() } : {}),
});

async function graphql(pass: Pass, target: string, query: string, variables: Record<string, unknown> = {}) {
  return observe(pass, target, () => t.api.post("/graphql").set(bearer(pass)).send({ query, variables }));
}

async function sample(pass: Pass): Promise<Samples> {
  const viewer = await graphql(pass, "sample: viewer", "{ viewer { scopes } }");
  const scopes = new Set<string>(viewer.body.data.viewer.scopes);

  // The table with destination bindings, so pause and resume have a binding to act on; a webhook
  // endpoint the pass sees.
  const endpoint = await webhookEndpointFor(pass);
  const rows = new Map<string, string>([["/v1/tables", A().tables.bound], ["/v1/webhook-endpoints", endpoint]]);
  const collections = routes.filter((r) => r.method === "GET" && !r.path.includes(":")).map((r) => r.path);
  for (const collection of collections) {
    if (rows.has(collection)) continue;
    const res = await observe(pass, `sample: GET ${collection}`, () => t.api.get(collection).set(bearer(pass)));
    const id = res.status === 200 && Array.isArray(res.body.data) ? (res.body.data as { id?: string }[])[0]?.id : undefined;
    if (id) rows.set(collection, id);
  }

  const ids = new Map<string, string>([["Table", A().tables.bound], ["WebhookEndpoint", endpoint]]);
  for (const typeName of idArgumentTypes()) {
    if (ids.has(typeName)) continue;
    const list = Object.values(schema.getQueryType()!.getFields()).find((f) => !hasRequiredArgs(f) && listedType(f)?.name === typeName);
    if (!list) continue;
    const nodes = listedType(list) === getNamedType(list.type) ? "{ id }" : "{ nodes { id } }";
    const res = await graphql(pass, `sample: ${list.name}`, `{ ${list.name} ${nodes} }`);
    const value = res.body.data?.[list.name];
    const id = (Array.isArray(value) ? value : value?.nodes)?.[0]?.id;
    if (id) ids.set(typeName, id);
  }

  const people = await graphql(pass, "sample: guests", "{ guests(limit: 100) { nodes { id givenName familyName email masterProfileId } } }");
  const guest = (people.body.data.guests.nodes as { id: string; givenName: string; familyName: string; email: string; masterProfileId: string }[]).find(
    (g) => g.givenName && g.familyName && g.email && g.masterProfileId,
  );
  if (!guest) throw new Error(`${pass.name} sees no guest with a name, an e-mail and a master profile`);
  const other = (people.body.data.guests.nodes as { id: string; masterProfileId: string }[]).find((g) => g.masterProfileId === guest.masterProfileId && g.id !== guest.id);
  const person = {
    guestId: guest.id,
    otherGuestId: other?.id ?? guest.id,
    name: `${guest.givenName} ${guest.familyName}`,
    email: guest.email,
    masterProfileId: guest.masterProfileId,
  };
  const spareEndpoints = [await webhookEndpointFor(pass), await webhookEndpointFor(pass)];
  return { scopes, rows, ids, person, property: pass.caller().propertyId ?? A().properties[0], provider: manifest.destinations[0], spareEndpoints };
}

// ---- REST: every route of the route table --------------------------------------------------------

/** Required body members, by name; a route with another required member fails until it is added here. */
const BODY_VALUES: Record<string, unknown> = { member_type: "guest_profile", filter_doc: UNBOUND_FILTER, url: WEBHOOK_URL, topics: ["*"] };
/** Bodies of routes whose members are all optional but one is due (replay: cursor or since). */
const ROUTE_BODIES: Record<string, (s: Samples) => Record<string, unknown>> = {
  "POST /v1/webhook-endpoints/:id/replay": () => ({ since: "2020-01-01T00:00:00Z" }),
  // The lookup: every kind of input at once, and a purpose (each adds its statements).
  "POST /v1/guests/lookup": (s) => ({
    guest_profile_ids: [s.person.guestId], master_profile_ids: [s.person.masterProfileId], emails: [s.person.email],
    phones: ["+44 7700 900123"], purpose: "email_marketing",
  }),
};

function pathFor(route: RouteSpec, s: Samples): string {
  return route.path.replace(/:(\w+)/g, (_, name: string) => {
    if (name === "provider") return s.provider;
    if (route.method === "DELETE" && route.path === "/v1/webhook-endpoints/:id") return s.spareEndpoints[0];
    const collection = route.path.slice(0, route.path.indexOf(`/:${name}`));
    const id = name === "id" ? s.rows.get(collection) : undefined;
    if (!id) throw new Error(`${route.method} ${route.path}: no value for :${name} (no row of GET ${collection}); teach statement-isolation.test.ts`);
    return id;
  });
}

function bodyFor(route: RouteSpec, s: Samples): Record<string, unknown> | undefined {
  if (!route.body) return undefined;
  if (ROUTE_BODIES[`${route.method} ${route.path}`]) return ROUTE_BODIES[`${route.method} ${route.path}`](s);
  const body: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(route.body)) {
    if (!spec.required) continue;
    if (!(name in BODY_VALUES)) throw new Error(`${route.method} ${route.path}: no value for required body member ${name}; add it to BODY_VALUES`);
    body[name] = BODY_VALUES[name];
  }
  return body;
}

async function callRoute(pass: Pass, route: RouteSpec, s: Samples): Promise<string | undefined> {
  const target = `${route.method} ${route.path}`;
  // Required query parameters (a table's reachability needs its purpose) with the values the variants give them.
  const required = Object.entries(route.query ?? {}).filter(([, spec]) => spec.required);
  const url = pathFor(route, s) + (required.length ? `?${new URLSearchParams(required.map(([name]): [string, string] => [name, queryValues(route, name, s)[0]]))}` : "");
  const body = bodyFor(route, s);
  const res = await observe(pass, target, () => {
    const req = route.method === "GET" ? t.api.get(url) : route.method === "DELETE" ? t.api.delete(url) : t.api.post(url);
    req.set(bearer(pass));
    return body ? req.send(body) : req;
  });
  if (res.status === (route.status ?? 200)) return answer(pass, target);
  if (res.status === 403 && refusalIsDue(res.body.error, route.scope, s)) return undefined;
  return `${pass.name}, ${target}: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`;
}

/** Uuid filters, by name; a route with another uuid filter fails until it is added here. */
const UUID_FILTERS: Record<string, (s: Samples) => string | undefined> = {
  property_id: (s) => s.property,
  guest_profile_id: (s) => s.person.guestId,
  master_profile_id: (s) => s.person.masterProfileId,
  reservation_id: (s) => s.rows.get("/v1/reservations"),
  integration_id: (s) => s.rows.get("/v1/integrations"),
  program_id: (s) => s.rows.get("/v1/loyalty/programs"),
};
/** Text filters worth a real value (others get "x": an empty result still runs the statement). */
const TEXT_FILTERS: Record<string, (s: Samples) => string> = {
  q: (s) => s.person.name,
  email: (s) => s.person.email,
  contact_value: (s) => s.person.email,
  purpose: () => "email_marketing",
};
/** Filters that need a companion: a source id is looked up within one integration. */
const COMPANIONS: Record<string, string[]> = { source_id: ["integration_id"] };
const PAGING = new Set(["limit", "cursor", "offset"]);

function queryValues(route: RouteSpec, name: string, s: Samples): string[] {
  const spec = route.query![name];
  type ValueSchema = { type?: string; format?: string; enum?: string[]; anyOf?: ValueSchema[]; items?: ValueSchema };
  const listed = spec.schema() as ValueSchema;
  // A range bound takes a date and an instant (anyOf): both; a list (expand) its items.
  if (listed.anyOf) return listed.anyOf.map((form) => (form.format === "date" ? "2020-01-01" : "2020-01-01T00:00:00Z"));
  const schema = listed.type === "array" && listed.items ? listed.items : listed;
  if (schema.enum) return schema.enum.includes("true") ? ["true"] : schema.enum; // a boolean, or every enum value
  if (schema.format === "uuid") {
    const value = UUID_FILTERS[name]?.(s);
    if (!value) throw new Error(`${route.method} ${route.path}: no value for the uuid filter ${name}; add it to UUID_FILTERS`);
    return [value];
  }
  if (schema.format === "date-time") return ["2020-01-01T00:00:00Z"];
  if (schema.format === "date") return ["2020-01-01"];
  if (schema.type === "integer") return ["1"];
  return [TEXT_FILTERS[name]?.(s) ?? "x"];
}

/**
 * Each filter of a GET route alone (every value of an enum), and the second page: filters and
 * cursors change the statements a route issues, and each must stay scoped.
 */
async function callRouteVariants(pass: Pass, route: RouteSpec, s: Samples): Promise<string[]> {
  if (route.method !== "GET" || !route.query) return [];
  if (!s.scopes.has(route.scope)) return []; // refused before any filter is read (callRoute checked the refusal)
  const base = pathFor(route, s);
  const queries: Record<string, string>[] = [];
  for (const name of Object.keys(route.query)) {
    if (PAGING.has(name)) continue;
    for (const value of queryValues(route, name, s)) {
      const query: Record<string, string> = { [name]: value };
      for (const companion of COMPANIONS[name] ?? []) query[companion] = queryValues(route, companion, s)[0];
      queries.push(query);
    }
  }
  const problems: string[] = [];
  const get = async (query: Record<string, string>) => {
    const url = `${base}?${new URLSearchParams(query)}`;
    const res = await observe(pass, `GET ${url}`, () => t.api.get(url).set(bearer(pass)));
    if (res.status !== 200) problems.push(`${pass.name}, GET ${url}: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
    return res;
  };
  for (const query of queries) await get(query);
  if ("cursor" in route.query) {
    const first = await get({ limit: "1" });
    if (first.body.next_cursor) await get({ limit: "1", cursor: first.body.next_cursor });
  } else if ("offset" in route.query) {
    await get({ limit: "1", offset: "1" });
  }
  return problems;
}

// ---- GraphQL: every root field of Query and Mutation -------------------------------------------

const hasRequiredArgs = (f: GraphQLField<unknown, unknown>) => f.args.some((a) => isNonNullType(a.type) && a.defaultValue === undefined);

/** The type a list field lists: T of [T] or of a page's `nodes: [T]`. */
function listedType(f: GraphQLField<unknown, unknown>): GraphQLNamedType | undefined {
  const named = getNamedType(f.type);
  if (f.type.toString().startsWith("[") && isObjectType(named)) return named;
  const nodes = isObjectType(named) ? named.getFields().nodes : undefined;
  return nodes ? getNamedType(nodes.type) : undefined;
}

/** The type a required uuid argument names: `id` the field's own type, `tableId` a Table. */
function idArgumentType(field: GraphQLField<unknown, unknown>, arg: string): string | undefined {
  if (arg === "id") return getNamedType(field.type).name;
  return arg.endsWith("Id") ? arg[0].toUpperCase() + arg.slice(1, -2) : undefined;
}

function idArgumentTypes(): Set<string> {
  const types = new Set<string>();
  for (const root of [schema.getQueryType()!, schema.getMutationType()!]) {
    for (const field of Object.values(root.getFields())) {
      for (const arg of field.args) {
        const type = isNonNullType(arg.type) && getNamedType(arg.type).name === "UUID" ? idArgumentType(field, arg.name) : undefined;
        if (type) types.add(type);
      }
    }
  }
  return types;
}

/** Arguments beyond ids: the exactly-one-of fields and those that take values, not ids. */
const FIELD_ARGUMENTS: Record<string, (s: Samples) => Record<string, unknown>> = {
  guestSearch: (s) => ({ query: s.person.name }),
  guestContext: (s) => ({ masterProfileId: s.person.masterProfileId }),
  contactPermission: (s) => ({ email: s.person.email, purpose: "email_marketing" }),
  mergeExplanation: (s) => ({ guestProfileId: s.person.guestId, otherGuestProfileId: s.person.otherGuestId }),
  lookupGuests: (s) => ({
    input: { guestProfileIds: [s.person.guestId], masterProfileIds: [s.person.masterProfileId], emails: [s.person.email], phones: ["+44 7700 900123"], purpose: "email_marketing" },
  }),
  tableReachability: () => ({ purpose: "email_marketing" }),
  tablePreview: () => ({ memberType: "guest_profile", filterDoc: UNBOUND_FILTER }),
  pauseDestination: (s) => ({ provider: s.provider }),
  resumeDestination: (s) => ({ provider: s.provider }),
  // Dashboard aggregates: every join they make (guests, folio lines, loyalty tiers, consent) asked for.
  stayMetrics: () => ({ filter: { arrivalFrom: "2025-06-01", arrivalTo: "2027-05-31" }, groupBy: ["property", "month", "guest_country"] }),
  guestMetrics: () => ({ groupBy: ["property", "loyalty_tier"], emailPurpose: "email_marketing", smsPurpose: "sms_marketing" }),
  consentMetrics: () => ({ purpose: "email_marketing", groupBy: ["property", "month"] }),
  reviewMetrics: () => ({ groupBy: ["property", "month"] }),
  // Webhook endpoints: a receiver on loopback, the sampled endpoint, a spare one to delete.
  webhookDeliveries: (s) => ({ endpointId: s.ids.get("WebhookEndpoint") }),
  createWebhookEndpoint: () => ({ url: WEBHOOK_URL, topics: ["*"] }),
  testWebhookEndpoint: (s) => ({ id: s.ids.get("WebhookEndpoint") }),
  replayWebhookEndpoint: () => ({ since: "2020-01-01T00:00:00Z" }),
  deleteWebhookEndpoint: (s) => ({ id: s.spareEndpoints[1] }),
};

function argumentsFor(field: GraphQLField<unknown, unknown>, s: Samples): Record<string, unknown> {
  const values = FIELD_ARGUMENTS[field.name]?.(s) ?? {};
  for (const arg of field.args) {
    if (arg.name in values) continue;
    if (arg.name === "limit") values.limit = 2;
    else if (isNonNullType(arg.type)) {
      const type = getNamedType(arg.type).name === "UUID" ? idArgumentType(field, arg.name) : undefined;
      const id = type ? s.ids.get(type) : undefined;
      if (!id) throw new Error(`${field.name}(${arg.name}:) has no value to call it with; add one to FIELD_ARGUMENTS`);
      values[arg.name] = id;
    }
  }
  return values;
}

/** Every field without required arguments, objects to `depth` levels (lists of relations with limit 2). */
function selection(type: GraphQLNamedType, depth: number): string {
  if (isLeafType(type)) return "";
  if (isUnionType(type)) return `{ __typename ${type.getTypes().map((member) => `... on ${member.name} ${selection(member, depth)}`).join(" ")} }`;
  const parts = ["__typename"];
  for (const field of Object.values((type as GraphQLObjectType).getFields())) {
    if (hasRequiredArgs(field)) continue;
    const named = getNamedType(field.type);
    if (isLeafType(named)) parts.push(field.name);
    else if (depth > 1) parts.push(`${field.name}${field.args.some((a) => a.name === "limit") ? "(limit: 2)" : ""} ${selection(named, depth - 1)}`);
  }
  if (isInterfaceType(type)) parts.push(...schema.getPossibleTypes(type).map((member) => `... on ${member.name} { __typename }`));
  return `{ ${parts.join(" ")} }`;
}

function operationFor(kind: "query" | "mutation", field: GraphQLField<unknown, unknown>, variables: Record<string, unknown>): string {
  const used = field.args.filter((a) => a.name in variables);
  const declared = used.length ? `(${used.map((a) => `$${a.name}: ${a.type}`).join(", ")})` : "";
  const passed = used.length ? `(${used.map((a) => `${a.name}: $${a.name}`).join(", ")})` : "";
  return `${kind} Isolation${declared} { ${field.name}${passed} ${selection(getNamedType(field.type), SELECTION_DEPTH)} }`;
}

function scopeOf(field: GraphQLField<unknown, unknown>): string | undefined {
  const directive = field.astNode?.directives?.find((d) => d.name.value === "requiresScope");
  const value = directive?.arguments?.[0]?.value;
  return value?.kind === Kind.STRING ? value.value : undefined;
}

async function callField(pass: Pass, kind: "query" | "mutation", field: GraphQLField<unknown, unknown>, s: Samples): Promise<string | undefined> {
  const target = `${kind === "query" ? "Query" : "Mutation"}.${field.name}`;
  const variables = argumentsFor(field, s);
  const res = await graphql(pass, target, operationFor(kind, field, variables), variables);
  const errors = res.body.errors as { message: string; extensions?: { code?: string } }[] | undefined;
  if (res.status === 200 && !errors && res.body.data?.[field.name] !== undefined) return answer(pass, target);
  if (errors?.length === 1 && refusalIsDue(errors[0].extensions?.code, scopeOf(field), s)) return undefined;
  return `${pass.name}, ${target}: ${res.status} ${JSON.stringify(res.body).slice(0, 400)}`;
}

// ---- MCP: the task tools --------------------------------------------------------------------------

/** Arguments per task tool; a tool without an entry fails the test until it gets one. */
const TOOL_ARGUMENTS: Record<string, (s: Samples) => Record<string, unknown>> = {
  find_guests: (s) => ({ query: s.person.name }),
  guest_context: (s) => ({ master_profile_id: s.person.masterProfileId }),
  check_contact_permission: (s) => ({ email: s.person.email, purpose: "email_marketing" }),
  explain_merge: (s) => ({ guest_profile_id: s.person.guestId, other_guest_profile_id: s.person.otherGuestId }),
  stay_performance: () => ({ from: "2025-06-01", to: "2027-05-31", group_by: ["property", "channel"] }),
  review_trend: () => ({ group_by: ["source"] }),
  guest_reach: () => ({ group_by: ["loyalty_tier"] }),
  list_webhook_endpoints: () => ({}),
  list_webhook_deliveries: (s) => ({ endpoint_id: s.ids.get("WebhookEndpoint") }),
};

async function callTool(pass: Pass, tool: (typeof taskTools)[number], s: Samples): Promise<string | undefined> {
  const target = `MCP ${tool.name}`;
  const args = TOOL_ARGUMENTS[tool.name];
  if (!args) return `${target}: no arguments to call it with; add them to TOOL_ARGUMENTS`;
  const res = await observe(pass, target, () =>
    t.api
      .post("/mcp")
      .set(bearer(pass))
      .set("Accept", "application/json, text/event-stream")
      .send({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: tool.name, arguments: args(s) } }),
  );
  const result = res.body?.result as { isError?: boolean; content: { text: string }[] } | undefined;
  if (res.status === 200 && result && !result.isError) return answer(pass, target);
  // A tool whose scope the credential lacks is not listed: the SDK answers "not found" in plain text.
  if (result?.isError && result.content[0].text.includes(`Tool ${tool.name} not found`) && !s.scopes.has(tool.scope)) return undefined;
  const error = result?.isError ? (JSON.parse(result.content[0].text) as { error?: string }).error : undefined;
  if (refusalIsDue(error, tool.scope, s)) return undefined;
  return `${pass.name}, ${target}: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`;
}

// ---- the sweep ------------------------------------------------------------------------------------

function answer(pass: Pass, target: string): undefined {
  answered.set(target, (answered.get(target) ?? new Set()).add(pass.name));
  return undefined;
}

/** A refusal is right only for a scope the credential lacks, or a surface that needs a web-app session. */
const refusalIsDue = (code: string | undefined, scope: string | undefined, s: Samples) =>
  code === "session_required" || (code === "forbidden" && scope !== undefined && !s.scopes.has(scope));

it("derives the tenant tables from the database's catalogue", () => {
  // A property_group_id column; or reached only through a tenant parent (a partner's access tokens).
  expect([...tenant.group]).toEqual(expect.arrayContaining(["guest_profiles", "loyalty_programs", "table_members", "api_keys", "partner_access_tokens"]));
  // Not tenant data: the tenant root, the shared rate limit counters, the migration log.
  for (const table of ["property_groups", "organisations", "rate_limit_counters", "gcs_schema_migrations"]) expect(tenant.group.has(table)).toBe(false);
  // Rows of one property: a property column, or through guest profiles and integrations; group-wide tables are not.
  expect([...tenant.property]).toEqual(expect.arrayContaining(["properties", "guest_profiles", "loyalty_members", "master_profiles", "integration_connections"]));
  for (const table of ["loyalty_programs", "table_members", "master_profile_counts"]) expect(tenant.property.has(table)).toBe(false);
});

describe("every statement on tenant data carries the caller's group predicate", () => {
  it.each(PASSES)(
    "as $name: every route, GraphQL root field and MCP task tool, one request at a time",
    async (pass) => {
      const before = findings.length;
      const s = await sample(pass);
      const problems: (string | undefined)[] = [];
      for (const route of routes) problems.push(await callRoute(pass, route, s));
      if (pass.variants) for (const route of routes) problems.push(...(await callRouteVariants(pass, route, s)));
      for (const field of Object.values(schema.getQueryType()!.getFields())) problems.push(await callField(pass, "query", field, s));
      for (const field of Object.values(schema.getMutationType()!.getFields())) problems.push(await callField(pass, "mutation", field, s));
      if (pass.mcp) for (const tool of taskTools) problems.push(await callTool(pass, tool, s));
      // Both lists at once: a leak and a failed call are each worth reading.
      expect({ failedCalls: problems.filter(Boolean), leaks: findings.slice(before) }).toEqual({ failedCalls: [], leaks: [] });
    },
    120_000,
  );

  it("answered every route of the route table, every root field and every task tool for at least one credential", () => {
    const targets = [
      ...routes.map((r) => `${r.method} ${r.path}`),
      ...Object.keys(schema.getQueryType()!.getFields()).map((f) => `Query.${f}`),
      ...Object.keys(schema.getMutationType()!.getFields()).map((f) => `Mutation.${f}`),
      ...taskTools.map((tool) => `MCP ${tool.name}`),
    ];
    expect(targets.filter((target) => !answered.has(target))).toEqual([]);
    expect(tally.tenantStatements).toBeGreaterThan(tally.requests); // most requests read tenant data, often twice
    expect(tally.narrowed).toBeGreaterThan(PASSES.filter((p) => p.caller().propertyId).length * routes.length); // the property rule was applied
    const exempted = [...tally.exempted].map(([name, n]) => `${n} ${name}`).join(", ");
    console.log(
      `statement isolation: ${routes.length} routes, ${Object.keys(schema.getQueryType()!.getFields()).length + Object.keys(schema.getMutationType()!.getFields()).length} GraphQL root fields, ` +
        `${taskTools.length} MCP task tools, ${PASSES.length} credentials; ${tally.requests} requests, ${tally.statements} statements checked, ` +
        `${tally.tenantStatements} on the ${tenant.group.size} tenant tables, ${tally.narrowed} of them held to a property too (allow-listed: ${exempted || "none"})`,
    );
  });

  it("would catch a leak: statements on tenant tables without the predicate, logged by the same server, are flagged", async () => {
    const pinned = PASSES.find((p) => p.name.includes("pinned"))!;
    const leak = new Client({ connectionString: pg.adminUrl(), application_name: "gcs-isolation-leak" });
    await leak.connect();
    try {
      await leak.query("SELECT id, email FROM guest_profiles WHERE id = $1", [A().guest_lookup.guest_id]);
      await leak.query(`SELECT "id" FROM "public"."guest_profiles" WHERE "property_group_id" = $1 LIMIT 1`, [A().id]);
      await leak.query(`SELECT id FROM guest_profiles WHERE property_group_id = $1 LIMIT 1`, [manifest.groups.B.id]);
    } finally {
      await leak.end();
    }
    const statements = (await log.window()).filter((s) => s.application === "gcs-isolation-leak");
    expect(statements.map((s) => checkStatement(s, pinned.caller(), tenant).missing)).toEqual(["group", "property", "group"]);
  });
});

describe("with the application predicate left out, Row Level Security alone keeps group B's rows out", () => {
  /** Every id of group B's rows, from every table that holds a group's data (read as the superuser). */
  async function groupBIds(): Promise<Set<string>> {
    const ids = new Set<string>([manifest.groups.B.id]);
    const { rows: tables } = await markers.query<{ table: string }>(`
      SELECT c.table_name AS table FROM information_schema.columns c
      WHERE c.table_schema = 'public' AND c.column_name = 'property_group_id'
        AND EXISTS (SELECT 1 FROM information_schema.columns i WHERE i.table_schema = 'public' AND i.table_name = c.table_name AND i.column_name = 'id' AND i.data_type = 'uuid')`);
    for (const { table } of tables) {
      const { rows } = await markers.query<{ id: string }>(`SELECT id::text AS id FROM "${table}" WHERE property_group_id = $1`, [manifest.groups.B.id]);
      for (const r of rows) ids.add(r.id);
    }
    return ids;
  }

  it("as group A's API key: every route, its filters and second pages, GraphQL root field and MCP task tool answer no id of group B's rows", async () => {
    const pass = PASSES[0];
    const foreignIds = await groupBIds();
    expect(foreignIds.size).toBeGreaterThan(100); // group B has rows in many tables to leak
    const before = findings.length;
    secondWallOnly = { foreignIds, answers: 0 };
    leaveOutApplicationPredicateForTests(true);
    try {
      // The first wall is down: a scoped statement's tenant predicate is now TRUE.
      expect(tenantSql("GuestProfile", { propertyGroupId: A().id, propertyId: null }, "t").sql).toBe("TRUE");
      const s = await sample(pass);
      const problems: (string | undefined)[] = [];
      for (const route of routes) problems.push(await callRoute(pass, route, s));
      for (const route of routes) problems.push(...(await callRouteVariants(pass, route, s)));
      for (const field of Object.values(schema.getQueryType()!.getFields())) problems.push(await callField(pass, "query", field, s));
      for (const field of Object.values(schema.getMutationType()!.getFields())) problems.push(await callField(pass, "mutation", field, s));
      for (const tool of taskTools) problems.push(await callTool(pass, tool, s));
      expect(secondWallOnly.answers).toBeGreaterThan(routes.length * 2);
      // A whole-group caller gets its answers from the wall alone: no call fails, no foreign id shows.
      expect({ failedCalls: problems.filter(Boolean), leaks: findings.slice(before) }).toEqual({ failedCalls: [], leaks: [] });
    } finally {
      leaveOutApplicationPredicateForTests(false);
      secondWallOnly = undefined;
    }
  }, 180_000);
});
