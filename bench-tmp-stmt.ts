// scratch: CPU per statement through each layer (run with tsx from the repo root; deleted before commit)
import pg from "pg";
import { readFileSync } from "node:fs";
import { TenantPool } from "./src/db/tenant-pool";
import { asGroup } from "./src/db/session";
import { scopedSql, sql } from "./src/data/sql";
import { runStatement } from "./src/db/sql-count";

const url = "postgres://postgres@127.0.0.1:55432/b20k";
const manifest = JSON.parse(readFileSync("/tmp/m43/manifest.json", "utf8"));
const group = manifest.groups.A.id as string;
const guest = manifest.groups.A.guest_with_events as string;
const TEXT = `SELECT t.id AS "id" FROM guest_profiles t WHERE t.property_group_id = $1::uuid AND t.id = $2::uuid`;
const N = Number(process.env.N ?? 20000);
const C = 10;

async function measure(label: string, one: () => Promise<unknown>) {
  for (let i = 0; i < 2000; i++) await one();
  const before = process.cpuUsage();
  let left = N;
  await Promise.all(Array.from({ length: C }, async () => { while (left-- > 0) await one(); }));
  const u = process.cpuUsage(before);
  console.log(`${label.padEnd(40)} ${((u.user + u.system) / N).toFixed(1)} µs CPU/statement (user ${(u.user / N).toFixed(1)}, sys ${(u.system / N).toFixed(1)})`);
}

(async () => {
  const plain = new pg.Pool({ connectionString: url, max: C });
  const tenant = new TenantPool({ connectionString: url, max: C });
  const scoped = scopedSql(tenant as unknown as pg.Pool, { propertyGroupId: group, propertyId: null } as never);
  for (let r = 0; r < 2; r++) {
    await measure("pg Pool, named, array rows", () => plain.query({ name: "x", text: TEXT, values: [group, guest], rowMode: "array" }));
    await measure("TenantPool in asGroup, named", () => asGroup(group, () => tenant.query({ name: "x", text: TEXT, values: [group, guest], rowMode: "array" })));
    await measure("runStatement on TenantPool", () => asGroup(group, () => runStatement(tenant as unknown as pg.Pool, TEXT, [group, guest], "x")));
    await measure("scopedSql rows, prepared", () => scoped.rows({ from: "GuestProfile", shape: { id: "value" } as never, where: [sql`t.id = ${guest}::uuid`], prepare: true }));
  }
  await plain.end(); await tenant.end();
})();
