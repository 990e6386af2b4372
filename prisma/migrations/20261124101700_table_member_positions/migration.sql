-- A curated table's members get consecutive positions in the order they were added, so an offset
-- page is a seek on (table_id, position) instead of reading and discarding `offset` rows.
-- Existing rows are numbered 1, 2, 3 … in the order pages listed them until now: (added_at, member_id).
ALTER TABLE "table_members" ADD COLUMN "position" INTEGER;

UPDATE "table_members" m
SET "position" = r.n
FROM (
  SELECT "table_id", "member_id", row_number() OVER (PARTITION BY "table_id" ORDER BY "added_at", "member_id") AS n
  FROM "table_members"
) r
WHERE m."table_id" = r."table_id" AND m."member_id" = r."member_id";

ALTER TABLE "table_members" ALTER COLUMN "position" SET NOT NULL;

-- The (added_at, member_id) index served only that page order; position replaces it.
DROP INDEX "table_members_table_id_added_at_member_id_idx";
CREATE INDEX "table_members_table_id_position_idx" ON "table_members"("table_id", "position");
