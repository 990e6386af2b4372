-- find_guests / guestSearch (src/graphql/resolvers/guest-search.ts) looks one free-text query up by
-- name, e-mail, phone, source id, loyalty member number and confirmation number, each by equality
-- or prefix on an index, so a lookup stays a few index probes at 1,000,000 guests per group. No
-- extension (pg_trgm, unaccent): PGlite runs these same migrations. Prisma cannot declare
-- expression indexes or functions, so those live here only (schema.prisma says so).

-- Accent and case folding with a fixed map, so it is IMMUTABLE and can be indexed: letters with
-- diacritics become their base letter (upper case straight to lower case, so the result does not
-- depend on the database's locale), apostrophes are dropped (O'Brien = obrien), then lower().
-- Queries fold their text with the same function, so index and query always agree.
CREATE FUNCTION gcs_fold(text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT lower(translate($1,
    'ÀÁÂÃÄÅĀĂĄàáâãäåāăąÇĆĈĊČçćĉċčĎĐÐďđðÈÉÊËĒĔĖĘĚèéêëēĕėęěĜĞĠĢĝğġģĤĦĥħÌÍÎÏĨĪĬĮİìíîïĩīĭįıĴĵĶķĹĻĽĿŁĺļľŀłÑŃŅŇñńņňÒÓÔÕÖØŌŎŐòóôõöøōŏőŔŖŘŕŗřŚŜŞŠśŝşšßŢŤŦţťŧÞþÙÚÛÜŨŪŬŮŰŲùúûüũūŭůűųŴŵÝŸŶýÿŷŹŻŽźżžÆæŒœ''’',
    'aaaaaaaaaaaaaaaaaaccccccccccddddddeeeeeeeeeeeeeeeeeegggggggghhhhiiiiiiiiiiiiiiiiiijjkkllllllllllnnnnnnnnoooooooooooooooooorrrrrrsssssssssttttttttuuuuuuuuuuuuuuuuuuuuwwyyyyyyzzzzzzaaoo'))
$$;

-- Full names in either order: a prefix of the family name, then the given name, in one range scan.
-- text_pattern_ops so LIKE 'smi%' is an index range whatever the collation.
CREATE INDEX "guest_profiles_group_fold_family_given_idx" ON "guest_profiles"
  ("property_group_id", gcs_fold("family_name") text_pattern_ops, gcs_fold("given_name") text_pattern_ops);
-- One word that may be a given name only ("Olivia").
CREATE INDEX "guest_profiles_group_fold_given_idx" ON "guest_profiles"
  ("property_group_id", gcs_fold("given_name") text_pattern_ops);
-- Phone numbers compared as their digits: "+44 (0)7700-900 123" and "+447700900123" meet here.
CREATE INDEX "guest_profiles_group_phone_digits_idx" ON "guest_profiles"
  ("property_group_id", regexp_replace("phone", '[^0-9]', '', 'g'));

-- CreateIndex
CREATE INDEX "guest_profiles_property_group_id_source_id_idx" ON "guest_profiles"("property_group_id", "source_id");

-- CreateIndex
CREATE INDEX "loyalty_members_property_group_id_member_number_idx" ON "loyalty_members"("property_group_id", "member_number");

-- Reservations already have (property_group_id, confirmation_number); e-mails (property_group_id,
-- lower(email)) since 20261123060000_guest_email_lower.

-- Statistics on the new expressions exist only once ANALYZE has seen them.
ANALYZE "guest_profiles";
ANALYZE "loyalty_members";
