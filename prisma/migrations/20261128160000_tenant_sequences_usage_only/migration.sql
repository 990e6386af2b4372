-- gcs_tenant may draw from the sequences but not set them (docs/security.md). A statement that
-- escapes the first wall could otherwise setval('events_seq_seq', 1): every group's appends would
-- then fail on the primary key, and webhook-ids (made from seq) would repeat, so receivers would
-- drop real events as duplicates. Nor read them: `SELECT last_value FROM events_seq_seq` would
-- count every group's events. nextval, which the inserts' defaults call, needs USAGE only.
REVOKE UPDATE, SELECT ON ALL SEQUENCES IN SCHEMA public FROM gcs_tenant;
ALTER DEFAULT PRIVILEGES IN SCHEMA public REVOKE UPDATE, SELECT ON SEQUENCES FROM gcs_tenant;
