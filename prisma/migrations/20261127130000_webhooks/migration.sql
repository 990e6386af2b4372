-- Webhooks (issue 29): endpoints that receive a group's event log, signed with Standard Webhooks.
-- Each endpoint keeps a timeline cursor (txid, seq) and is sent to under a lease (like
-- destination_bindings), never under a transaction held across the receiver's answer.
CREATE TYPE "WebhookEndpointState" AS ENUM ('active', 'disabled');

CREATE TABLE "webhook_endpoints" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "property_group_id" UUID NOT NULL,
    "url" TEXT NOT NULL,
    "topics" TEXT[],
    "property_ids" UUID[],
    "description" TEXT,
    "state" "WebhookEndpointState" NOT NULL DEFAULT 'active',
    "disabled_reason" TEXT,
    "disabled_at" TIMESTAMPTZ(3),
    "secret_ciphertext" TEXT NOT NULL,
    "previous_secret_ciphertext" TEXT,
    "previous_secret_until" TIMESTAMPTZ(3),
    "cursor_txid" BIGINT NOT NULL DEFAULT 0,
    "cursor_seq" BIGINT NOT NULL DEFAULT 0,
    "failure_count" INTEGER NOT NULL DEFAULT 0,
    "failing_since" TIMESTAMPTZ(3),
    "next_attempt_at" TIMESTAMPTZ(3),
    "last_error" TEXT,
    "lease_token" UUID,
    "lease_until" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "webhook_endpoints_pkey" PRIMARY KEY ("id")
);

CREATE TABLE "webhook_deliveries" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "endpoint_id" UUID NOT NULL,
    "property_group_id" UUID NOT NULL,
    "message_id" TEXT NOT NULL,
    "event_type" TEXT NOT NULL,
    "event_seq" BIGINT,
    "attempt" INTEGER NOT NULL,
    "status" TEXT NOT NULL,
    "response_code" INTEGER,
    "duration_ms" INTEGER NOT NULL,
    "error" TEXT,
    "next_retry_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "webhook_deliveries_pkey" PRIMARY KEY ("id")
);

CREATE INDEX "webhook_endpoints_property_group_id_id_idx" ON "webhook_endpoints"("property_group_id", "id");
CREATE INDEX "webhook_endpoints_state_next_attempt_at_idx" ON "webhook_endpoints"("state", "next_attempt_at");
CREATE INDEX "webhook_deliveries_endpoint_id_created_at_id_idx" ON "webhook_deliveries"("endpoint_id", "created_at" DESC, "id");

ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_endpoint_id_fkey" FOREIGN KEY ("endpoint_id") REFERENCES "webhook_endpoints"("id") ON DELETE CASCADE ON UPDATE CASCADE;
