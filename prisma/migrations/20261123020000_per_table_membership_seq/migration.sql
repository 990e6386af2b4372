-- Membership change seqs become positions in each table's own log (1, 2, 3 …), so that a
-- binding's lag (log_head − confirmed_seq) counts the changes not yet delivered.

-- The old key is on seq alone: drop it first, or renumbering two tables' logs collides.
DROP INDEX "table_membership_changes_table_id_seq_idx";
ALTER TABLE "table_membership_changes" DROP CONSTRAINT "table_membership_changes_pkey",
ALTER COLUMN "seq" DROP DEFAULT;

-- Cursors next: a binding's confirmed position becomes the number of its table's changes it had
-- confirmed.
UPDATE "destination_bindings" b
SET "confirmed_seq" = (
  SELECT count(*) FROM "table_membership_changes" c
  WHERE c."table_id" = b."table_id" AND c."seq" <= b."confirmed_seq"
);

-- Then renumber each table's log in its existing order.
UPDATE "table_membership_changes" c
SET "seq" = r.n
FROM (
  SELECT "seq" AS old, row_number() OVER (PARTITION BY "table_id" ORDER BY "seq") AS n
  FROM "table_membership_changes"
) r
WHERE c."seq" = r.old;

ALTER TABLE "table_membership_changes" ADD CONSTRAINT "table_membership_changes_pkey" PRIMARY KEY ("table_id", "seq");

DROP SEQUENCE IF EXISTS "table_membership_changes_seq_seq";
