// The one place tenant scoping lives. `scopedPrisma` wraps the Prisma client a request uses so that
// every model query is ANDed with the caller's scope: a resolver cannot forget it. Models that are
// not tenant data (credentials, organisations, service secrets) are refused on the scoped client.
import type { PrismaClient } from "../generated/prisma/client";
import type { Scope } from "./scope";

type Where = Record<string, unknown>;

/** Where-fragment that limits `model` to the scope; undefined for models that are not tenant data. */
export function tenantWhere(model: string, scope: Scope): Where | undefined {
  const group = { propertyGroupId: scope.propertyGroupId };
  const p = scope.propertyId;
  switch (model) {
    case "Property":
      return p ? { ...group, id: p } : group;
    // Rows that always belong to one property.
    case "Integration":
    case "GuestProfile":
    case "Reservation":
    case "Transaction":
    case "Action":
    case "Review":
    case "Space":
    case "Event":
      return p ? { ...group, propertyId: p } : group;
    // Rows that belong to one property or, with no property, to the whole group (a group-wide
    // consent, channel or table applies at every property).
    case "ConsentObservation":
    case "Channel":
    case "GuestTable":
      return p ? { ...group, OR: [{ propertyId: p }, { propertyId: null }] } : group;
    case "LoyaltyMember":
      return p ? { ...group, OR: [{ enrolmentPropertyId: p }, { enrolmentPropertyId: null }] } : group;
    case "IntegrationConnection":
      return p ? { ...group, integration: { propertyId: p } } : group;
    case "MasterProfile":
      // A master profile is visible at a property when one of its guest profiles is there.
      return p ? { ...group, guests: { some: { propertyId: p } } } : group;
    case "LoyaltyProgram":
    case "TableMember":
    case "TableMembershipChange":
    case "DestinationConnection":
    case "DestinationBinding":
      return group;
    default:
      return undefined;
  }
}

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
