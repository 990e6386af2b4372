-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "public";

-- CreateEnum
CREATE TYPE "PropertyKind" AS ENUM ('hotel', 'resort', 'serviced_apartments', 'restaurant', 'bar', 'spa');

-- CreateEnum
CREATE TYPE "IntegrationStatus" AS ENUM ('pending', 'connected', 'error');

-- CreateEnum
CREATE TYPE "ReservationKind" AS ENUM ('stay', 'dining', 'spa', 'event');

-- CreateEnum
CREATE TYPE "ReservationStatus" AS ENUM ('tentative', 'confirmed', 'checked_in', 'checked_out', 'cancelled', 'no_show');

-- CreateEnum
CREATE TYPE "TransactionKind" AS ENUM ('charge', 'payment', 'refund', 'adjustment');

-- CreateEnum
CREATE TYPE "ConsentStatus" AS ENUM ('granted', 'withdrawn', 'denied');

-- CreateEnum
CREATE TYPE "ContactType" AS ENUM ('email', 'phone');

-- CreateEnum
CREATE TYPE "ActionStatus" AS ENUM ('open', 'in_progress', 'done', 'cancelled');

-- CreateEnum
CREATE TYPE "ActionPriority" AS ENUM ('low', 'normal', 'high', 'urgent');

-- CreateEnum
CREATE TYPE "TableKind" AS ENUM ('curated', 'filter');

-- CreateEnum
CREATE TYPE "MemberType" AS ENUM ('guest_profile', 'master_profile');

-- CreateEnum
CREATE TYPE "MembershipOp" AS ENUM ('add', 'remove');

-- CreateEnum
CREATE TYPE "BindingState" AS ENUM ('active', 'paused', 'error');

-- CreateEnum
CREATE TYPE "EntityType" AS ENUM ('guest_profile', 'reservation', 'transaction', 'action', 'loyalty_program', 'membership', 'review', 'channel', 'space');

-- CreateEnum
CREATE TYPE "EventOperation" AS ENUM ('create', 'update', 'delete');

-- CreateEnum
CREATE TYPE "LoyaltyMemberStatus" AS ENUM ('active', 'suspended', 'closed');

-- CreateTable
CREATE TABLE "service_secrets" (
    "name" TEXT NOT NULL,
    "value" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "service_secrets_pkey" PRIMARY KEY ("name")
);

-- CreateTable
CREATE TABLE "organisations" (
    "id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "organisations_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "property_groups" (
    "id" UUID NOT NULL,
    "organisation_id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "property_groups_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "properties" (
    "id" UUID NOT NULL,
    "property_group_id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "code" TEXT NOT NULL,
    "kind" "PropertyKind" NOT NULL,
    "timezone" TEXT NOT NULL,
    "country_code" CHAR(2) NOT NULL,
    "city" TEXT NOT NULL,
    "address_line" TEXT,
    "currency" CHAR(3) NOT NULL,
    "room_count" INTEGER,
    "seat_count" INTEGER,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "properties_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "integrations" (
    "id" UUID NOT NULL,
    "property_group_id" UUID NOT NULL,
    "property_id" UUID NOT NULL,
    "provider" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "status" "IntegrationStatus" NOT NULL DEFAULT 'pending',
    "status_detail" TEXT,
    "source_ref" TEXT NOT NULL,
    "last_synced_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "integrations_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "integration_connections" (
    "id" UUID NOT NULL,
    "integration_id" UUID NOT NULL,
    "property_group_id" UUID NOT NULL,
    "auth_type" TEXT NOT NULL,
    "account_label" TEXT NOT NULL,
    "secret_ciphertext" TEXT NOT NULL,
    "granted_scopes" TEXT[],
    "expires_at" TIMESTAMPTZ(3),
    "rotated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "integration_connections_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "master_profiles" (
    "id" UUID NOT NULL,
    "property_group_id" UUID NOT NULL,
    "given_name" TEXT,
    "family_name" TEXT,
    "email" TEXT,
    "phone" TEXT,
    "language" TEXT,
    "country_code" CHAR(2),
    "birth_date" DATE,
    "vip" BOOLEAN NOT NULL DEFAULT false,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "master_profiles_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "guest_profiles" (
    "id" UUID NOT NULL,
    "property_group_id" UUID NOT NULL,
    "property_id" UUID NOT NULL,
    "integration_id" UUID NOT NULL,
    "source_id" TEXT NOT NULL,
    "master_profile_id" UUID,
    "given_name" TEXT,
    "family_name" TEXT,
    "email" TEXT,
    "phone" TEXT,
    "language" TEXT,
    "country_code" CHAR(2),
    "city" TEXT,
    "birth_date" DATE,
    "vip_code" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "guest_profiles_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "reservations" (
    "id" UUID NOT NULL,
    "property_group_id" UUID NOT NULL,
    "property_id" UUID NOT NULL,
    "integration_id" UUID NOT NULL,
    "source_id" TEXT NOT NULL,
    "guest_profile_id" UUID,
    "confirmation_number" TEXT NOT NULL,
    "kind" "ReservationKind" NOT NULL DEFAULT 'stay',
    "status" "ReservationStatus" NOT NULL,
    "arrival_date" DATE NOT NULL,
    "departure_date" DATE NOT NULL,
    "starts_at" TIMESTAMPTZ(3),
    "adults" INTEGER NOT NULL DEFAULT 1,
    "children" INTEGER NOT NULL DEFAULT 0,
    "room_type" TEXT,
    "room_number" TEXT,
    "rate_code" TEXT,
    "space_id" UUID,
    "booking_channel" TEXT,
    "total_amount_minor" BIGINT NOT NULL DEFAULT 0,
    "currency" CHAR(3) NOT NULL,
    "special_requests" TEXT,
    "booked_at" TIMESTAMPTZ(3) NOT NULL,
    "cancelled_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "reservations_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "transactions" (
    "id" UUID NOT NULL,
    "property_group_id" UUID NOT NULL,
    "property_id" UUID NOT NULL,
    "integration_id" UUID NOT NULL,
    "source_id" TEXT NOT NULL,
    "guest_profile_id" UUID,
    "reservation_id" UUID,
    "kind" "TransactionKind" NOT NULL,
    "category" TEXT NOT NULL,
    "description" TEXT,
    "amount_minor" BIGINT NOT NULL,
    "currency" CHAR(3) NOT NULL,
    "outlet" TEXT,
    "occurred_at" TIMESTAMPTZ(3) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "transactions_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "consent_observations" (
    "id" UUID NOT NULL,
    "property_group_id" UUID NOT NULL,
    "property_id" UUID,
    "integration_id" UUID,
    "guest_profile_id" UUID,
    "contact_type" "ContactType" NOT NULL,
    "contact_value" TEXT NOT NULL,
    "purpose" TEXT NOT NULL,
    "channel" TEXT NOT NULL,
    "status" "ConsentStatus" NOT NULL,
    "source" TEXT NOT NULL,
    "observed_at" TIMESTAMPTZ(3) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "consent_observations_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "actions" (
    "id" UUID NOT NULL,
    "property_group_id" UUID NOT NULL,
    "property_id" UUID NOT NULL,
    "guest_profile_id" UUID,
    "reservation_id" UUID,
    "kind" TEXT NOT NULL,
    "title" TEXT NOT NULL,
    "body" TEXT,
    "status" "ActionStatus" NOT NULL DEFAULT 'open',
    "priority" "ActionPriority" NOT NULL DEFAULT 'normal',
    "assignee" TEXT,
    "due_at" TIMESTAMPTZ(3),
    "completed_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "actions_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "tables" (
    "id" UUID NOT NULL,
    "property_group_id" UUID NOT NULL,
    "property_id" UUID,
    "name" TEXT NOT NULL,
    "description" TEXT,
    "kind" "TableKind" NOT NULL,
    "member_type" "MemberType" NOT NULL,
    "filter_doc" JSONB,
    "created_by" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "tables_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "table_members" (
    "table_id" UUID NOT NULL,
    "member_id" UUID NOT NULL,
    "property_group_id" UUID NOT NULL,
    "added_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "table_members_pkey" PRIMARY KEY ("table_id","member_id")
);

-- CreateTable
CREATE TABLE "table_membership_changes" (
    "seq" BIGSERIAL NOT NULL,
    "table_id" UUID NOT NULL,
    "property_group_id" UUID NOT NULL,
    "member_id" UUID NOT NULL,
    "op" "MembershipOp" NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "table_membership_changes_pkey" PRIMARY KEY ("seq")
);

-- CreateTable
CREATE TABLE "destination_connections" (
    "id" UUID NOT NULL,
    "property_group_id" UUID NOT NULL,
    "provider" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "account_ref" TEXT NOT NULL,
    "secret_ciphertext" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "destination_connections_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "destination_bindings" (
    "id" UUID NOT NULL,
    "property_group_id" UUID NOT NULL,
    "table_id" UUID NOT NULL,
    "connection_id" UUID NOT NULL,
    "provider" TEXT NOT NULL,
    "remote_list_id" TEXT NOT NULL,
    "state" "BindingState" NOT NULL DEFAULT 'active',
    "confirmed_seq" BIGINT NOT NULL DEFAULT 0,
    "last_flush_at" TIMESTAMPTZ(3),
    "last_error" TEXT,
    "last_flush_counts" JSONB,
    "last_resync_run_handle" TEXT,
    "failure_count" INTEGER NOT NULL DEFAULT 0,
    "next_attempt_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "destination_bindings_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "events" (
    "seq" BIGSERIAL NOT NULL,
    "property_group_id" UUID NOT NULL,
    "entity_type" "EntityType" NOT NULL,
    "entity_id" UUID NOT NULL,
    "guest_profile_id" UUID,
    "property_id" UUID,
    "integration_id" UUID,
    "operation" "EventOperation" NOT NULL,
    "delta" JSONB NOT NULL,
    "occurred_at" TIMESTAMPTZ(3) NOT NULL,
    "recorded_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "txid" BIGINT NOT NULL DEFAULT (pg_current_xact_id())::text::bigint,

    CONSTRAINT "events_pkey" PRIMARY KEY ("seq")
);

-- CreateTable
CREATE TABLE "reviews" (
    "id" UUID NOT NULL,
    "property_group_id" UUID NOT NULL,
    "property_id" UUID NOT NULL,
    "integration_id" UUID,
    "source_id" TEXT,
    "guest_profile_id" UUID,
    "reservation_id" UUID,
    "source" TEXT NOT NULL,
    "rating" INTEGER NOT NULL,
    "source_rating" DECIMAL(5,2) NOT NULL,
    "source_scale" INTEGER NOT NULL,
    "title" TEXT,
    "body" TEXT,
    "language" TEXT,
    "published_at" TIMESTAMPTZ(3) NOT NULL,
    "response_body" TEXT,
    "responded_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "reviews_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "loyalty_programs" (
    "id" UUID NOT NULL,
    "property_group_id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "code" TEXT NOT NULL,
    "points_name" TEXT NOT NULL,
    "tiers" JSONB NOT NULL,
    "active" BOOLEAN NOT NULL DEFAULT true,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "loyalty_programs_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "loyalty_members" (
    "id" UUID NOT NULL,
    "property_group_id" UUID NOT NULL,
    "program_id" UUID NOT NULL,
    "guest_profile_id" UUID,
    "master_profile_id" UUID,
    "enrolment_property_id" UUID,
    "member_number" TEXT NOT NULL,
    "tier" TEXT NOT NULL,
    "status" "LoyaltyMemberStatus" NOT NULL DEFAULT 'active',
    "points_balance" INTEGER NOT NULL DEFAULT 0,
    "lifetime_points" INTEGER NOT NULL DEFAULT 0,
    "enrolled_at" TIMESTAMPTZ(3) NOT NULL,
    "tier_expires_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "loyalty_members_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "channels" (
    "id" UUID NOT NULL,
    "property_group_id" UUID NOT NULL,
    "property_id" UUID,
    "integration_id" UUID,
    "source_id" TEXT,
    "code" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "active" BOOLEAN NOT NULL DEFAULT true,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "channels_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "spaces" (
    "id" UUID NOT NULL,
    "property_group_id" UUID NOT NULL,
    "property_id" UUID NOT NULL,
    "integration_id" UUID,
    "source_id" TEXT,
    "code" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "capacity" INTEGER NOT NULL,
    "floor" TEXT,
    "active" BOOLEAN NOT NULL DEFAULT true,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "spaces_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "api_keys" (
    "id" UUID NOT NULL,
    "property_group_id" UUID NOT NULL,
    "property_id" UUID,
    "name" TEXT NOT NULL,
    "display_prefix" TEXT NOT NULL,
    "token_hash" TEXT NOT NULL,
    "scopes" TEXT[],
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "revoked_at" TIMESTAMPTZ(3),

    CONSTRAINT "api_keys_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "partner_credentials" (
    "id" UUID NOT NULL,
    "property_group_id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "client_id" TEXT NOT NULL,
    "client_secret_hash" TEXT NOT NULL,
    "scopes" TEXT[],
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "revoked_at" TIMESTAMPTZ(3),

    CONSTRAINT "partner_credentials_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "partner_access_tokens" (
    "id" UUID NOT NULL,
    "partner_credential_id" UUID NOT NULL,
    "token_hash" TEXT NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "revoked_at" TIMESTAMPTZ(3),

    CONSTRAINT "partner_access_tokens_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "static_tokens" (
    "id" UUID NOT NULL,
    "property_group_id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "token_hash" TEXT NOT NULL,
    "scopes" TEXT[],
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "revoked_at" TIMESTAMPTZ(3),

    CONSTRAINT "static_tokens_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "mcp_tokens" (
    "id" UUID NOT NULL,
    "property_group_id" UUID NOT NULL,
    "client_name" TEXT NOT NULL,
    "token_hash" TEXT NOT NULL,
    "scopes" TEXT[],
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "revoked_at" TIMESTAMPTZ(3),

    CONSTRAINT "mcp_tokens_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "property_groups_organisation_id_key" ON "property_groups"("organisation_id");

-- CreateIndex
CREATE INDEX "properties_property_group_id_name_id_idx" ON "properties"("property_group_id", "name", "id");

-- CreateIndex
CREATE UNIQUE INDEX "properties_property_group_id_code_key" ON "properties"("property_group_id", "code");

-- CreateIndex
CREATE INDEX "integrations_property_group_id_name_id_idx" ON "integrations"("property_group_id", "name", "id");

-- CreateIndex
CREATE UNIQUE INDEX "integration_connections_integration_id_key" ON "integration_connections"("integration_id");

-- CreateIndex
CREATE INDEX "integration_connections_property_group_id_idx" ON "integration_connections"("property_group_id");

-- CreateIndex
CREATE INDEX "master_profiles_property_group_id_created_at_id_idx" ON "master_profiles"("property_group_id", "created_at", "id");

-- CreateIndex
CREATE INDEX "master_profiles_property_group_id_email_idx" ON "master_profiles"("property_group_id", "email");

-- CreateIndex
CREATE INDEX "guest_profiles_property_group_id_created_at_id_idx" ON "guest_profiles"("property_group_id", "created_at", "id");

-- CreateIndex
CREATE INDEX "guest_profiles_property_group_id_property_id_created_at_id_idx" ON "guest_profiles"("property_group_id", "property_id", "created_at", "id");

-- CreateIndex
CREATE INDEX "guest_profiles_property_group_id_master_profile_id_idx" ON "guest_profiles"("property_group_id", "master_profile_id");

-- CreateIndex
CREATE INDEX "guest_profiles_property_group_id_email_idx" ON "guest_profiles"("property_group_id", "email");

-- CreateIndex
CREATE UNIQUE INDEX "guest_profiles_integration_id_source_id_key" ON "guest_profiles"("integration_id", "source_id");

-- CreateIndex
CREATE INDEX "reservations_property_group_id_created_at_id_idx" ON "reservations"("property_group_id", "created_at", "id");

-- CreateIndex
CREATE INDEX "reservations_property_group_id_guest_profile_id_idx" ON "reservations"("property_group_id", "guest_profile_id");

-- CreateIndex
CREATE INDEX "reservations_property_group_id_confirmation_number_idx" ON "reservations"("property_group_id", "confirmation_number");

-- CreateIndex
CREATE INDEX "reservations_property_group_id_arrival_date_idx" ON "reservations"("property_group_id", "arrival_date");

-- CreateIndex
CREATE UNIQUE INDEX "reservations_integration_id_source_id_key" ON "reservations"("integration_id", "source_id");

-- CreateIndex
CREATE INDEX "transactions_property_group_id_created_at_id_idx" ON "transactions"("property_group_id", "created_at", "id");

-- CreateIndex
CREATE INDEX "transactions_property_group_id_guest_profile_id_idx" ON "transactions"("property_group_id", "guest_profile_id");

-- CreateIndex
CREATE INDEX "transactions_property_group_id_reservation_id_idx" ON "transactions"("property_group_id", "reservation_id");

-- CreateIndex
CREATE UNIQUE INDEX "transactions_integration_id_source_id_key" ON "transactions"("integration_id", "source_id");

-- CreateIndex
CREATE INDEX "consent_observations_property_group_id_created_at_id_idx" ON "consent_observations"("property_group_id", "created_at", "id");

-- CreateIndex
CREATE INDEX "consent_observations_property_group_id_contact_value_purpos_idx" ON "consent_observations"("property_group_id", "contact_value", "purpose");

-- CreateIndex
CREATE INDEX "consent_observations_property_group_id_guest_profile_id_idx" ON "consent_observations"("property_group_id", "guest_profile_id");

-- CreateIndex
CREATE INDEX "actions_property_group_id_created_at_id_idx" ON "actions"("property_group_id", "created_at", "id");

-- CreateIndex
CREATE INDEX "actions_property_group_id_guest_profile_id_idx" ON "actions"("property_group_id", "guest_profile_id");

-- CreateIndex
CREATE INDEX "tables_property_group_id_created_at_id_idx" ON "tables"("property_group_id", "created_at", "id");

-- CreateIndex
CREATE INDEX "table_membership_changes_table_id_seq_idx" ON "table_membership_changes"("table_id", "seq");

-- CreateIndex
CREATE INDEX "destination_connections_property_group_id_idx" ON "destination_connections"("property_group_id");

-- CreateIndex
CREATE INDEX "destination_bindings_property_group_id_idx" ON "destination_bindings"("property_group_id");

-- CreateIndex
CREATE UNIQUE INDEX "destination_bindings_table_id_provider_key" ON "destination_bindings"("table_id", "provider");

-- CreateIndex
CREATE INDEX "events_property_group_id_seq_idx" ON "events"("property_group_id", "seq");

-- CreateIndex
CREATE INDEX "events_property_group_id_guest_profile_id_seq_idx" ON "events"("property_group_id", "guest_profile_id", "seq");

-- CreateIndex
CREATE INDEX "events_property_group_id_entity_type_entity_id_seq_idx" ON "events"("property_group_id", "entity_type", "entity_id", "seq");

-- CreateIndex
CREATE INDEX "reviews_property_group_id_created_at_id_idx" ON "reviews"("property_group_id", "created_at", "id");

-- CreateIndex
CREATE INDEX "reviews_property_group_id_guest_profile_id_idx" ON "reviews"("property_group_id", "guest_profile_id");

-- CreateIndex
CREATE INDEX "loyalty_programs_property_group_id_created_at_id_idx" ON "loyalty_programs"("property_group_id", "created_at", "id");

-- CreateIndex
CREATE UNIQUE INDEX "loyalty_programs_property_group_id_code_key" ON "loyalty_programs"("property_group_id", "code");

-- CreateIndex
CREATE INDEX "loyalty_members_property_group_id_created_at_id_idx" ON "loyalty_members"("property_group_id", "created_at", "id");

-- CreateIndex
CREATE INDEX "loyalty_members_property_group_id_guest_profile_id_idx" ON "loyalty_members"("property_group_id", "guest_profile_id");

-- CreateIndex
CREATE INDEX "loyalty_members_property_group_id_master_profile_id_idx" ON "loyalty_members"("property_group_id", "master_profile_id");

-- CreateIndex
CREATE UNIQUE INDEX "loyalty_members_program_id_member_number_key" ON "loyalty_members"("program_id", "member_number");

-- CreateIndex
CREATE INDEX "channels_property_group_id_created_at_id_idx" ON "channels"("property_group_id", "created_at", "id");

-- CreateIndex
CREATE INDEX "spaces_property_group_id_created_at_id_idx" ON "spaces"("property_group_id", "created_at", "id");

-- CreateIndex
CREATE UNIQUE INDEX "api_keys_token_hash_key" ON "api_keys"("token_hash");

-- CreateIndex
CREATE INDEX "api_keys_property_group_id_idx" ON "api_keys"("property_group_id");

-- CreateIndex
CREATE UNIQUE INDEX "partner_credentials_client_id_key" ON "partner_credentials"("client_id");

-- CreateIndex
CREATE INDEX "partner_credentials_property_group_id_idx" ON "partner_credentials"("property_group_id");

-- CreateIndex
CREATE UNIQUE INDEX "partner_access_tokens_token_hash_key" ON "partner_access_tokens"("token_hash");

-- CreateIndex
CREATE UNIQUE INDEX "static_tokens_token_hash_key" ON "static_tokens"("token_hash");

-- CreateIndex
CREATE INDEX "static_tokens_property_group_id_idx" ON "static_tokens"("property_group_id");

-- CreateIndex
CREATE UNIQUE INDEX "mcp_tokens_token_hash_key" ON "mcp_tokens"("token_hash");

-- CreateIndex
CREATE INDEX "mcp_tokens_property_group_id_idx" ON "mcp_tokens"("property_group_id");

-- AddForeignKey
ALTER TABLE "property_groups" ADD CONSTRAINT "property_groups_organisation_id_fkey" FOREIGN KEY ("organisation_id") REFERENCES "organisations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "properties" ADD CONSTRAINT "properties_property_group_id_fkey" FOREIGN KEY ("property_group_id") REFERENCES "property_groups"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "integrations" ADD CONSTRAINT "integrations_property_id_fkey" FOREIGN KEY ("property_id") REFERENCES "properties"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "integration_connections" ADD CONSTRAINT "integration_connections_integration_id_fkey" FOREIGN KEY ("integration_id") REFERENCES "integrations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "guest_profiles" ADD CONSTRAINT "guest_profiles_master_profile_id_fkey" FOREIGN KEY ("master_profile_id") REFERENCES "master_profiles"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "guest_profiles" ADD CONSTRAINT "guest_profiles_integration_id_fkey" FOREIGN KEY ("integration_id") REFERENCES "integrations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "reservations" ADD CONSTRAINT "reservations_guest_profile_id_fkey" FOREIGN KEY ("guest_profile_id") REFERENCES "guest_profiles"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "table_members" ADD CONSTRAINT "table_members_table_id_fkey" FOREIGN KEY ("table_id") REFERENCES "tables"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "destination_bindings" ADD CONSTRAINT "destination_bindings_table_id_fkey" FOREIGN KEY ("table_id") REFERENCES "tables"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "destination_bindings" ADD CONSTRAINT "destination_bindings_connection_id_fkey" FOREIGN KEY ("connection_id") REFERENCES "destination_connections"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "loyalty_members" ADD CONSTRAINT "loyalty_members_program_id_fkey" FOREIGN KEY ("program_id") REFERENCES "loyalty_programs"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "partner_access_tokens" ADD CONSTRAINT "partner_access_tokens_partner_credential_id_fkey" FOREIGN KEY ("partner_credential_id") REFERENCES "partner_credentials"("id") ON DELETE CASCADE ON UPDATE CASCADE;

