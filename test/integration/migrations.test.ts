// Migrations applied to a database that already holds data (not only to empty ones).
import { migrate } from "../../src/db/migrate";
import { databaseBefore } from "../helpers/migration-database";

it("per-table membership positions: renumbers every table's log and keeps each binding's confirmed position", async () => {
  // The schema as it was before the migration, recorded as applied, with two tables' logs interleaved.
  const { url, db, drop } = await databaseBefore("20261123020000_per_table_membership_seq");
  try {
    const g = "00000000-0000-4000-8000-000000000002";
    const [t1, t2] = ["00000000-0000-4000-8000-0000000000a1", "00000000-0000-4000-8000-0000000000a2"];
    await db.query(`INSERT INTO organisations (id, name) VALUES ('00000000-0000-4000-8000-000000000001', 'o')`);
    await db.query(`INSERT INTO property_groups (id, organisation_id, name) VALUES ($1, '00000000-0000-4000-8000-000000000001', 'g')`, [g]);
    await db.query(`INSERT INTO tables (id, property_group_id, name, kind, member_type) VALUES ($1, $3, 't1', 'curated', 'guest_profile'), ($2, $3, 't2', 'curated', 'guest_profile')`, [t1, t2, g]);
    await db.query(
      `INSERT INTO table_membership_changes (table_id, property_group_id, member_id, op)
       SELECT CASE WHEN i % 2 = 0 THEN $1::uuid ELSE $2::uuid END, $3, gen_random_uuid(), 'add' FROM generate_series(1, 6) i`,
      [t1, t2, g],
    );
    const t1Seqs = (await db.query("SELECT seq FROM table_membership_changes WHERE table_id = $1 ORDER BY seq", [t1])).rows.map((r) => r.seq);
    await db.query(`INSERT INTO destination_connections (id, property_group_id, provider, name, account_ref, secret_ciphertext) VALUES ('00000000-0000-4000-8000-0000000000c1', $1, 'mailchimp', 'm', 'acc', 'x')`, [g]);
    // Confirmed up to t1's second change.
    await db.query(
      `INSERT INTO destination_bindings (id, property_group_id, table_id, connection_id, provider, remote_list_id, confirmed_seq, updated_at)
       VALUES ('00000000-0000-4000-8000-0000000000b1', $1, $2, '00000000-0000-4000-8000-0000000000c1', 'mailchimp', 'list', $3, now())`,
      [g, t1, t1Seqs[1]],
    );

    const result = await migrate(url);
    expect(result.applied).toContain("20261123020000_per_table_membership_seq");
    const rows = (await db.query("SELECT table_id, seq::int FROM table_membership_changes ORDER BY table_id, seq")).rows;
    expect(rows.map((r) => `${r.table_id.slice(-2)}:${r.seq}`)).toEqual(["a1:1", "a1:2", "a1:3", "a2:1", "a2:2", "a2:3"]);
    expect((await db.query("SELECT confirmed_seq::int AS c FROM destination_bindings")).rows[0].c).toBe(2);
  } finally {
    await drop();
  }
});

it("an amended migration: a database that recorded its earlier text migrates on; any other change to it is still refused", async () => {
  // Applied as it was first written (its sha256 then), before the migration that follows it.
  const { url, db, drop } = await databaseBefore("20261128150000_tenant_wall_other_tables");
  try {
    const original = "42b369166c96d8962fc44e7e5e15f907f81a2fb12a321acd4bf7a70fcd0d0f62";
    await db.query("UPDATE gcs_schema_migrations SET checksum = $1 WHERE name = '20261127190000_row_level_security'", [original]);
    await expect(migrate(url)).resolves.toMatchObject({ applied: expect.arrayContaining(["20261128150000_tenant_wall_other_tables"]) });
    await db.query("UPDATE gcs_schema_migrations SET checksum = 'edited' WHERE name = '20261127190000_row_level_security'");
    await expect(migrate(url)).rejects.toThrow("migration 20261127190000_row_level_security was changed after it was applied");
  } finally {
    await drop();
  }
});
