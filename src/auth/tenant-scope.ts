// Tenant scoping moved to the data layer (src/data/tenant.ts); the tests still import it from here.
export { scopedPrisma, tenantSql, tenantWhere, type TenantModel } from "../data/tenant";
