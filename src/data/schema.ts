// The tables data/ reads in SQL and their columns by field name, as schema.prisma @@map/@map
// declares them. Written out rather than derived (snake_case is only the usual spelling), so a
// column renamed in the schema fails loudly here instead of silently selecting a missing column.
export const SQL_TABLES = {
  GuestProfile: {
    table: "guest_profiles",
    columns: {
      id: "id", propertyGroupId: "property_group_id", propertyId: "property_id", integrationId: "integration_id",
      sourceId: "source_id", masterProfileId: "master_profile_id", givenName: "given_name", familyName: "family_name",
      email: "email", phone: "phone", language: "language", countryCode: "country_code", city: "city",
      birthDate: "birth_date", vipCode: "vip_code", createdAt: "created_at", updatedAt: "updated_at",
    },
  },
  MasterProfile: {
    table: "master_profiles",
    columns: {
      id: "id", propertyGroupId: "property_group_id", givenName: "given_name", familyName: "family_name", email: "email",
      phone: "phone", language: "language", countryCode: "country_code", birthDate: "birth_date", vip: "vip",
      createdAt: "created_at", updatedAt: "updated_at",
    },
  },
  MasterProfileCount: { table: "master_profile_counts", columns: { propertyGroupId: "property_group_id", total: "total" } },
  Reservation: {
    table: "reservations",
    columns: {
      id: "id", propertyGroupId: "property_group_id", propertyId: "property_id", integrationId: "integration_id",
      sourceId: "source_id", guestProfileId: "guest_profile_id", confirmationNumber: "confirmation_number", kind: "kind",
      status: "status", arrivalDate: "arrival_date", departureDate: "departure_date", startsAt: "starts_at",
      adults: "adults", children: "children", roomType: "room_type", roomNumber: "room_number", rateCode: "rate_code",
      spaceId: "space_id", bookingChannel: "booking_channel", totalAmountMinor: "total_amount_minor", currency: "currency",
      specialRequests: "special_requests", bookedAt: "booked_at", cancelledAt: "cancelled_at", createdAt: "created_at",
      updatedAt: "updated_at",
    },
  },
  Transaction: {
    table: "transactions",
    columns: {
      id: "id", propertyGroupId: "property_group_id", propertyId: "property_id", integrationId: "integration_id",
      sourceId: "source_id", guestProfileId: "guest_profile_id", reservationId: "reservation_id", kind: "kind",
      category: "category", description: "description", amountMinor: "amount_minor", currency: "currency",
      outlet: "outlet", occurredAt: "occurred_at", createdAt: "created_at",
    },
  },
  Event: {
    table: "events",
    columns: {
      seq: "seq", propertyGroupId: "property_group_id", entityType: "entity_type", entityId: "entity_id",
      guestProfileId: "guest_profile_id", propertyId: "property_id", integrationId: "integration_id",
      operation: "operation", delta: "delta", occurredAt: "occurred_at", recordedAt: "recorded_at", txid: "txid",
    },
  },
  GuestTable: {
    table: "tables",
    columns: {
      id: "id", propertyGroupId: "property_group_id", propertyId: "property_id", name: "name", description: "description",
      kind: "kind", memberType: "member_type", filterDoc: "filter_doc", createdBy: "created_by", createdAt: "created_at",
      updatedAt: "updated_at",
    },
  },
  TableMember: {
    table: "table_members",
    columns: { tableId: "table_id", memberId: "member_id", propertyGroupId: "property_group_id", addedAt: "added_at", position: "position" },
  },
} as const satisfies Record<string, { table: string; columns: Record<string, string> }>;

export type SqlModel = keyof typeof SQL_TABLES;

/** How a column reaches the API: as stored, or an instant or date rendered as its ISO string. */
export type ColumnKind = "value" | "instant" | "date";
/**
 * The fields a read returns (Prisma names) and how each is rendered. Code above data/ passes the
 * shape it needs (graphql/selection.ts narrows a model's full shape to a selection's columns).
 */
export type RowShape = Readonly<Record<string, ColumnKind>>;

/** The column of `field` in `model`'s table; throws for a field the mapping does not declare. */
export function columnOf(model: SqlModel, field: string): string {
  if (!Object.hasOwn(SQL_TABLES, model)) throw new Error(`${model} is not tenant data: it cannot be read through a request's scoped SQL`);
  const columns: Record<string, string> = SQL_TABLES[model].columns;
  if (!Object.hasOwn(columns, field)) throw new Error(`${model}.${field} has no declared column (data/schema.ts)`);
  return columns[field];
}
