// The one place tenant scoping lives. `scopedPrisma` wraps the Prisma client a request uses so that
// every model query is ANDed with the caller's scope: a resolver cannot forget it. Models that are
// not tenant data (credentials, organisations, service secrets) are refused on the scoped client.
import { Prisma, type PrismaClient } from "../generated/prisma/client";
import type { Sql } from "../generated/prisma/internal/prismaNamespace";
import type { Scope } from "./scope";

type Where = Record<string, unknown>;

/** How a model's rows belong to a tenant. Rendered as a Prisma where and as SQL, from this one table. */
type TenantRule =
  /** Group-wide rows: visible wherever the caller's group is. */
  | { kind: "group" }
  /** Rows of one property (`column` names it). */
  | { kind: "property"; column: string }
  /** Rows of one property or, with none, of the whole group (a group-wide consent, channel or table). */
  | { kind: "propertyOrGroupWide"; column: string }
  /** Rows of an integration that belongs to the property. */
  | { kind: "integrationAtProperty" }
  /** Master profiles: visible at a property when one of their guest profiles is there. */
  | { kind: "guestAtProperty" };

const TENANT_RULES: Record<string, TenantRule> = {
  Property: { kind: "property", column: "id" },
  Integration: { kind: "property", column: "propertyId" },
  GuestProfile: { kind: "property", column: "propertyId" },
  Reservation: { kind: "property", column: "propertyId" },
  Transaction: { kind: "property", column: "propertyId" },
  Action: { kind: "property", column: "propertyId" },
  Review: { kind: "property", column: "propertyId" },
  Space: { kind: "property", column: "propertyId" },
  Event: { kind: "property", column: "propertyId" },
  ConsentObservation: { kind: "propertyOrGroupWide", column: "propertyId" },
  Channel: { kind: "propertyOrGroupWide", column: "propertyId" },
  GuestTable: { kind: "propertyOrGroupWide", column: "propertyId" },
  LoyaltyMember: { kind: "propertyOrGroupWide", column: "enrolmentPropertyId" },
  IntegrationConnection: { kind: "integrationAtProperty" },
  MasterProfile: { kind: "guestAtProperty" },
  LoyaltyProgram: { kind: "group" },
  MasterProfileCount: { kind: "group" },
  TableMember: { kind: "group" },
  TableMembershipChange: { kind: "group" },
  DestinationConnection: { kind: "group" },
  DestinationBinding: { kind: "group" },
};

export type TenantModel = keyof typeof TENANT_RULES;

/** Where-fragment that limits `model` to the scope; undefined for models that are not tenant data. */
export function tenantWhere(model: string, scope: Scope): Where | undefined {
  const rule = TENANT_RULES[model];
  if (!rule) return undefined;
  const group = { propertyGroupId: scope.propertyGroupId };
  const p = scope.propertyId;
  if (!p || rule.kind === "group") return group;
  switch (rule.kind) {
    case "property":
      return { ...group, [rule.column]: p };
    case "propertyOrGroupWide":
      return { ...group, OR: [{ [rule.column]: p }, { [rule.column]: null }] };
    case "integrationAtProperty":
      return { ...group, integration: { propertyId: p } };
    case "guestAtProperty":
      return { ...group, guests: { some: { propertyId: p } } };
  }
}

/** The same rule as SQL over the table aliased `alias`; throws for models that are not tenant data. */
export function tenantSql(model: string, scope: Scope, alias: string): Sql {
  const rule = TENANT_RULES[model];
  if (!rule) throw new Error(`${model} is not tenant data: it cannot be read through a request's scoped SQL`);
  const t = Prisma.raw(alias);
  const group = Prisma.sql`${t}.property_group_id = ${scope.propertyGroupId}::uuid`;
  const p = scope.propertyId;
  if (!p || rule.kind === "group") return group;
  switch (rule.kind) {
    case "property":
      return Prisma.sql`${group} AND ${t}.${Prisma.raw(snakeCase(rule.column))} = ${p}::uuid`;
    case "propertyOrGroupWide": {
      const column = Prisma.raw(snakeCase(rule.column));
      return Prisma.sql`${group} AND (${t}.${column} = ${p}::uuid OR ${t}.${column} IS NULL)`;
    }
    case "integrationAtProperty":
      return Prisma.sql`${group} AND EXISTS (SELECT 1 FROM integrations i WHERE i.id = ${t}.integration_id AND i.property_id = ${p}::uuid)`;
    case "guestAtProperty":
      return Prisma.sql`${group} AND EXISTS (SELECT 1 FROM guest_profiles gp WHERE gp.master_profile_id = ${t}.id AND gp.property_group_id = ${scope.propertyGroupId}::uuid AND gp.property_id = ${p}::uuid)`;
  }
}

/** Prisma field name → column name (every @map in schema.prisma is the snake_case of its field). */
export const snakeCase = (field: string) => field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

const WHERE_OPERATIONS = new Set([
  "findUnique", "findUniqueOrThrow", "findFirst", "findFirstOrThrow", "findMany",
  "count", "aggregate", "groupBy", "update", "updateMany", "updateManyAndReturn", "delete", "deleteMany", "upsert",
]);

export function scopedPrisma(prisma: PrismaClient, scope: Scope): PrismaClient {
  return prisma.$extends({
    query: {
      $allModels: {
        $allOperations({ model, operation, args, query }) {
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
          return query(a);
        },
      },
    },
  }) as unknown as PrismaClient;
}
