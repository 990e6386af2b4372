// The one place tenant scoping lives: how each model's rows belong to a property group and a
// property (TENANT_RULES), rendered by `tenantWhere` for Prisma and `tenantSql` for SQL from that
// one table. Every data/ module reads through `scopedPrisma` (which ANDs the rule into every model
// query) or data/sql.ts (which ANDs `tenantSql` into every statement): a module cannot forget it.
// Models that are not tenant data (credentials, organisations, service secrets) are refused.
import { Prisma, type PrismaClient } from "../generated/prisma/client";
import type { Sql } from "../generated/prisma/internal/prismaNamespace";
// Taken once: each `Prisma.x` is a getter of the generated namespace (tenantSql runs on every statement).
const { sql, raw } = Prisma;
import type { Scope } from "./scope";
import { asGroup } from "../db/session";

type Where = Record<string, unknown>;

/** A field by its Prisma name and its column (the @map in schema.prisma), declared, not derived. */
interface Field {
  field: string;
  column: string;
}

/** How a model's rows belong to a tenant. */
type TenantRule =
  /** Group-wide rows: visible wherever the caller's group is. */
  | { kind: "group" }
  /** Rows of one property (`on` names the property column). */
  | { kind: "property"; on: Field }
  /** Rows of one property or, with none, of the whole group (a group-wide consent, channel or table). */
  | { kind: "propertyOrGroupWide"; on: Field }
  /** Rows of an integration that belongs to the property. */
  | { kind: "integrationAtProperty" }
  /** Master profiles: at a property when one of their guest profiles is there. */
  | { kind: "guestAtProperty" };

const PROPERTY_ID: Field = { field: "propertyId", column: "property_id" };
const byProperty: TenantRule = { kind: "property", on: PROPERTY_ID };
const group: TenantRule = { kind: "group" };

const TENANT_RULES = {
  Property: { kind: "property", on: { field: "id", column: "id" } },
  Integration: byProperty,
  GuestProfile: byProperty,
  // A link is its guest profile's: property_id is that profile's property.
  MasterProfileLink: byProperty,
  Reservation: byProperty,
  Transaction: byProperty,
  Action: byProperty,
  Review: byProperty,
  Space: byProperty,
  Event: byProperty,
  ConsentObservation: { kind: "propertyOrGroupWide", on: PROPERTY_ID },
  Channel: { kind: "propertyOrGroupWide", on: PROPERTY_ID },
  GuestTable: { kind: "propertyOrGroupWide", on: PROPERTY_ID },
  LoyaltyMember: { kind: "propertyOrGroupWide", on: { field: "enrolmentPropertyId", column: "enrolment_property_id" } },
  IntegrationConnection: { kind: "integrationAtProperty" },
  MasterProfile: { kind: "guestAtProperty" },
  LoyaltyProgram: group,
  MasterProfileCount: group,
  TableMember: group,
  TableMembershipChange: group,
  DestinationConnection: group,
  DestinationBinding: group,
  WebhookEndpoint: group,
  WebhookDelivery: group,
  MetricRollup: group,
  ReviewRollup: byProperty,
  MetricRollupState: group,
  MetricRollupChange: group,
  ContactConsentState: group,
  ConsentRollupPoint: group,
  GuestRollupFact: group,
  StayRollupFact: group,
} satisfies Record<string, TenantRule>;

export type TenantModel = keyof typeof TENANT_RULES;

const ruleOf = (model: string): TenantRule | undefined =>
  Object.hasOwn(TENANT_RULES, model) ? (TENANT_RULES as Record<string, TenantRule>)[model] : undefined;

/** Where-fragment that limits `model` to the scope; undefined for models that are not tenant data. */
/**
 * Test only: the application predicate left out of every statement, to show that the second wall
 * (Row Level Security, docs/security.md) alone keeps other groups' rows out
 * (test/integration/row-level-security.test.ts). Nothing in src/ turns it on.
 */
let applicationPredicate = true;
export function leaveOutApplicationPredicateForTests(leaveOut: boolean): void {
  applicationPredicate = !leaveOut;
}

export function tenantWhere(model: string, scope: Scope): Where | undefined {
  const rule = ruleOf(model);
  if (!rule) return undefined;
  if (!applicationPredicate) return {};
  const inGroup = { propertyGroupId: scope.propertyGroupId };
  const p = scope.propertyId;
  if (!p || rule.kind === "group") return inGroup;
  switch (rule.kind) {
    case "property":
      return { ...inGroup, [rule.on.field]: p };
    case "propertyOrGroupWide":
      return { ...inGroup, OR: [{ [rule.on.field]: p }, { [rule.on.field]: null }] };
    case "integrationAtProperty":
      // The inner relation is held to the group too, so the statement stays on one group's rows
      // (router-executable on a distributed database: docs/scaling.md).
      return { ...inGroup, integration: { ...inGroup, propertyId: p } };
    case "guestAtProperty":
      return { ...inGroup, guests: { some: { ...inGroup, propertyId: p } } };
  }
}

/** The same rule as SQL over the table aliased `alias`; throws for models that are not tenant data. */
export function tenantSql(model: string, scope: Scope, alias: string): Sql {
  const rule = ruleOf(model);
  if (!rule) throw new Error(`${model} is not tenant data: it cannot be read through a request's scoped SQL`);
  if (!applicationPredicate) return sql`TRUE`;
  const t = raw(alias);
  const groupId = sql`${scope.propertyGroupId}::uuid`;
  const inGroup = sql`${t}.property_group_id = ${groupId}`;
  const p = scope.propertyId;
  if (!p || rule.kind === "group") return inGroup;
  switch (rule.kind) {
    case "property":
      return sql`${inGroup} AND ${t}.${raw(rule.on.column)} = ${p}::uuid`;
    case "propertyOrGroupWide": {
      const column = raw(rule.on.column);
      return sql`${inGroup} AND (${t}.${column} = ${p}::uuid OR ${t}.${column} IS NULL)`;
    }
    case "integrationAtProperty":
      return sql`${inGroup} AND EXISTS (SELECT 1 FROM integrations i WHERE i.id = ${t}.integration_id AND i.property_group_id = ${groupId} AND i.property_id = ${p}::uuid)`;
    case "guestAtProperty":
      return sql`${inGroup} AND ${masterAtProperty(alias, groupId, sql`= ${p}::uuid`)}`;
  }
}

/**
 * "A master profile is at a property": one of its guest profiles of the group is there. The tenant
 * rule of master profiles, and the property filters on master profiles (list filter, table
 * filter documents) say it with this same condition. `properties` is the comparison, e.g.
 * `= $1::uuid` or `= ANY($1::uuid[])`.
 */
export function masterAtProperty(alias: string, groupId: Sql, properties: Sql): Sql {
  const t = raw(alias);
  return sql`EXISTS (SELECT 1 FROM guest_profiles gp WHERE gp.master_profile_id = ${t}.id AND gp.property_group_id = ${groupId} AND gp.property_id ${properties})`;
}

const WHERE_OPERATIONS = new Set([
  "findFirst", "findFirstOrThrow", "findMany",
  "count", "aggregate", "groupBy", "update", "updateMany", "updateManyAndReturn", "delete", "deleteMany", "upsert",
]);

export function scopedPrisma(prisma: PrismaClient, scope: Scope): PrismaClient {
  return prisma.$extends({
    query: {
      // Every operation, raw statements included: the second wall (db/session.ts) holds them all to
      // the group; model operations get the tenant rule as well.
      $allOperations({ model, operation, args, query }) {
        if (model === undefined) return asGroup(scope.propertyGroupId, () => query(args));
        // Prisma runs the findUniques of one tick as one batch, in the first caller's async context:
        // another request's lookup would run in that caller's group (db/session.ts). findFirst is not batched.
        if (operation === "findUnique" || operation === "findUniqueOrThrow") throw new Error(`${model}.${operation} on a request's scoped client: use findFirst`);
        const fragment = tenantWhere(model, scope);
        if (!fragment) throw new Error(`${model} is not tenant data: it cannot be read through a request's scoped client`);
        const a = (args ?? {}) as { where?: Where; data?: unknown };
        if (WHERE_OPERATIONS.has(operation)) {
          // Unique fields must stay at the top level of findUnique's where, so merge into AND.
          const where = a.where ?? {};
          const and = where.AND === undefined ? [] : Array.isArray(where.AND) ? where.AND : [where.AND];
          a.where = { ...where, AND: [...and, fragment] };
        } else if (operation.startsWith("create")) {
          const rows = Array.isArray(a.data) ? a.data : [a.data];
          for (const row of rows as { propertyGroupId?: string }[]) {
            if (row?.propertyGroupId !== scope.propertyGroupId) throw new Error(`refusing to write ${model} outside the caller's group`);
          }
        }
        return asGroup(scope.propertyGroupId, () => query(a as typeof args));
      },
    },
  }) as unknown as PrismaClient;
}
