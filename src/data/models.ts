// Each model data/ reads in SQL, declared once: its table, its columns with their type and
// nullability, which of them the API row carries and which the filter document may test. The SQL
// column lists (data/sql.ts), the row types (RowOf), the row shapes the reads render (`row`) and the
// filter document's fields (data/filter-document.ts) are all derived from these declarations.
// Column names are the field's snake_case, as schema.prisma maps them (`columnNames` overrides one);
// test/unit/models-prisma.test.ts fails when a declaration and schema.prisma disagree.
// Models read only through Prisma need no declaration: their row types come from the generated client.

/** A column's type; `?` marks it nullable. `enum` is a Prisma enum (text to the API), `bigint` and `decimal` arrive as decimal text. */
type BaseType = "uuid" | "text" | "enum" | "int" | "bigint" | "decimal" | "boolean" | "date" | "instant" | "json";
export type ColumnSpec = BaseType | `${BaseType}?`;

/** How a column reaches the API: as stored, or an instant or date rendered as its ISO string. */
export type ColumnKind = "value" | "instant" | "date";
/**
 * The fields a read returns (Prisma names) and how each is rendered. Code above data/ passes the
 * shape it needs (graphql/selection.ts narrows a model's full shape to a selection's columns).
 */
export type RowShape = Readonly<Record<string, ColumnKind>>;

/** The filter document's value types (data/filter-document.ts). */
export type FilterType = "string" | "uuid" | "date" | "instant" | "boolean";

type TsOf<B> = B extends "int" ? number : B extends "boolean" ? boolean : B extends "json" ? unknown : string;
type ValueOf<S> = S extends `${infer B}?` ? TsOf<B> | null : TsOf<S>;

interface Declaration<C extends Record<string, ColumnSpec>, I extends keyof C & string> {
  table: string;
  columns: C;
  /** Declared columns data/ reads (keys, the tenant column) that the API row does not carry. */
  internal?: readonly I[];
  /** Prisma scalar fields of the model that data/ never reads in SQL (the agreement test requires the list). */
  notExposed?: readonly string[];
  /** The fields a filter document may test, in the order its error messages list them (named as their column). */
  filterable?: readonly (keyof C & string)[];
  /** A column whose name is not the field's snake_case. */
  columnNames?: Partial<Record<keyof C, string>>;
}

export interface Model<C extends Record<string, ColumnSpec> = Record<string, ColumnSpec>, I extends string = string> {
  table: string;
  /** Every declared column by field name. */
  columns: Readonly<Record<keyof C & string, string>>;
  specs: C;
  internal: readonly I[];
  notExposed: readonly string[];
  /** The API row: every column but the internal ones, in declaration order. */
  row: RowShape;
  filterable: readonly { name: string; field: keyof C & string; type: FilterType }[];
}

/** A model's row as data/ hands it out: instants and dates as ISO text, bigints as decimal text. */
export type RowOf<M> = M extends Model<infer C, infer I> ? { [K in Exclude<keyof C, I>]: ValueOf<C[K]> } : never;

const snakeCase = (field: string) => field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
const baseOf = (spec: ColumnSpec) => spec.replace("?", "") as BaseType;
const KIND: Partial<Record<BaseType, ColumnKind>> = { date: "date", instant: "instant" };
const FILTER: Partial<Record<BaseType, FilterType>> = { text: "string", uuid: "uuid", date: "date", instant: "instant", boolean: "boolean" };

function model<const C extends Record<string, ColumnSpec>, const I extends keyof C & string = never>(d: Declaration<C, I>): Model<C, I> {
  const fields = Object.keys(d.columns) as (keyof C & string)[];
  const internal: readonly string[] = d.internal ?? [];
  const names = d.columnNames as Record<string, string> | undefined;
  const columnOf = (f: string) => names?.[f] ?? snakeCase(f);
  return {
    table: d.table,
    columns: Object.fromEntries(fields.map((f) => [f, columnOf(f)])) as Record<keyof C & string, string>,
    specs: d.columns,
    internal: d.internal ?? [],
    notExposed: d.notExposed ?? [],
    row: Object.fromEntries(fields.filter((f) => !internal.includes(f)).map((f) => [f, KIND[baseOf(d.columns[f])] ?? "value"])),
    filterable: (d.filterable ?? []).map((field) => {
      const type = FILTER[baseOf(d.columns[field])];
      if (!type) throw new Error(`${d.table}.${field}: a ${d.columns[field]} column cannot be filtered`);
      return { name: columnOf(field), field, type };
    }),
  };
}

/** The columns guests and master profiles share in filter documents, listed first. */
const PERSON_FILTERS = ["givenName", "familyName", "email", "phone", "language", "countryCode", "birthDate", "createdAt", "updatedAt"] as const;

export const GuestProfile = model({
  table: "guest_profiles",
  columns: {
    id: "uuid", propertyGroupId: "uuid", propertyId: "uuid", integrationId: "uuid", sourceId: "text", masterProfileId: "uuid?",
    givenName: "text?", familyName: "text?", email: "text?", phone: "text?", language: "text?", countryCode: "text?", city: "text?",
    birthDate: "date?", vipCode: "text?", createdAt: "instant", updatedAt: "instant",
  },
  internal: ["propertyGroupId"],
  filterable: [...PERSON_FILTERS, "city", "vipCode", "sourceId", "propertyId", "integrationId", "masterProfileId"],
});

export const MasterProfile = model({
  table: "master_profiles",
  columns: {
    id: "uuid", propertyGroupId: "uuid", givenName: "text?", familyName: "text?", email: "text?", phone: "text?", language: "text?",
    countryCode: "text?", birthDate: "date?", vip: "boolean", createdAt: "instant", updatedAt: "instant",
  },
  internal: ["propertyGroupId"],
  // property_id is no column of a master profile: data/filter-document.ts adds it as a relation.
  filterable: [...PERSON_FILTERS, "vip"],
});

/** How identity resolution joined a guest profile to its master (data/master-profile-links.ts). */
export const MasterProfileLink = model({
  table: "master_profile_links",
  columns: {
    id: "uuid", propertyGroupId: "uuid", masterProfileId: "uuid", guestProfileId: "uuid", linkedGuestProfileId: "uuid?", propertyId: "uuid",
    rule: "enum", matchedFields: "json", confidence: "decimal", linkedAt: "instant", linkedBy: "text", createdAt: "instant",
  },
  internal: ["propertyGroupId"],
});

export const MasterProfileCount = model({ table: "master_profile_counts", columns: { propertyGroupId: "uuid", total: "bigint" }, internal: ["propertyGroupId"] });

export const Reservation = model({
  table: "reservations",
  columns: {
    id: "uuid", propertyGroupId: "uuid", propertyId: "uuid", integrationId: "uuid", sourceId: "text", guestProfileId: "uuid?",
    confirmationNumber: "text", kind: "enum", status: "enum", arrivalDate: "date", departureDate: "date", startsAt: "instant?",
    adults: "int", children: "int", roomType: "text?", roomNumber: "text?", rateCode: "text?", spaceId: "uuid?", bookingChannel: "text?",
    totalAmountMinor: "bigint", currency: "text", specialRequests: "text?", bookedAt: "instant", cancelledAt: "instant?",
    createdAt: "instant", updatedAt: "instant",
  },
  internal: ["propertyGroupId"],
});

export const Transaction = model({
  table: "transactions",
  columns: {
    id: "uuid", propertyGroupId: "uuid", propertyId: "uuid", integrationId: "uuid", sourceId: "text", guestProfileId: "uuid?",
    reservationId: "uuid?", kind: "enum", category: "text", description: "text?", amountMinor: "bigint", currency: "text",
    outlet: "text?", occurredAt: "instant", createdAt: "instant",
  },
  internal: ["propertyGroupId"],
});

export const Event = model({
  table: "events",
  columns: {
    seq: "bigint", propertyGroupId: "uuid", entityType: "enum", entityId: "uuid", guestProfileId: "uuid?", propertyId: "uuid?",
    integrationId: "uuid?", operation: "enum", delta: "json", occurredAt: "instant", recordedAt: "instant", txid: "bigint",
  },
});

export const GuestTable = model({
  table: "tables",
  columns: {
    id: "uuid", propertyGroupId: "uuid", propertyId: "uuid?", name: "text", description: "text?", kind: "enum", memberType: "enum",
    filterDoc: "json?", createdBy: "text?", createdAt: "instant", updatedAt: "instant",
  },
});

export const TableMember = model({
  table: "table_members",
  columns: { tableId: "uuid", memberId: "uuid", propertyGroupId: "uuid", addedAt: "instant", position: "int" },
  internal: ["propertyGroupId"],
});

export const Review = model({
  table: "reviews",
  columns: {
    id: "uuid", propertyGroupId: "uuid", propertyId: "uuid", integrationId: "uuid?", sourceId: "text?", guestProfileId: "uuid?",
    reservationId: "uuid?", source: "text", rating: "int", sourceRating: "decimal", sourceScale: "int", title: "text?", body: "text?",
    language: "text?", publishedAt: "instant", responseBody: "text?", respondedAt: "instant?", createdAt: "instant",
  },
  internal: ["propertyGroupId"],
});

export const LoyaltyMember = model({
  table: "loyalty_members",
  columns: {
    id: "uuid", propertyGroupId: "uuid", programId: "uuid", guestProfileId: "uuid?", masterProfileId: "uuid?", enrolmentPropertyId: "uuid?",
    memberNumber: "text", tier: "text", status: "enum", pointsBalance: "int", lifetimePoints: "int", enrolledAt: "instant",
    tierExpiresAt: "instant?", createdAt: "instant", updatedAt: "instant",
  },
  internal: ["propertyGroupId"],
});

export const ConsentObservation = model({
  table: "consent_observations",
  columns: {
    id: "uuid", propertyGroupId: "uuid", propertyId: "uuid?", integrationId: "uuid?", guestProfileId: "uuid?", contactType: "enum",
    contactValue: "text", purpose: "text", channel: "text", status: "enum", source: "text", observedAt: "instant", createdAt: "instant",
  },
  internal: ["propertyGroupId"],
});

export const Action = model({
  table: "actions",
  columns: {
    id: "uuid", propertyGroupId: "uuid", propertyId: "uuid", guestProfileId: "uuid?", reservationId: "uuid?", kind: "text", title: "text",
    body: "text?", status: "enum", priority: "enum", assignee: "text?", dueAt: "instant?", completedAt: "instant?", createdAt: "instant",
    updatedAt: "instant",
  },
  internal: ["propertyGroupId"],
});

/** The bindings of tables as the binding view reads them (data/destinations.ts); the engine's columns are its store's. */
export const DestinationBinding = model({
  table: "destination_bindings",
  columns: {
    id: "uuid", propertyGroupId: "uuid", tableId: "uuid", connectionId: "uuid", provider: "text", remoteListId: "text", state: "enum",
    confirmedSeq: "bigint", lastFlushAt: "instant?", lastError: "text?", lastFlushCounts: "json?", lastResyncRunHandle: "text?",
  },
  internal: ["propertyGroupId"],
  notExposed: ["failureCount", "nextAttemptAt", "leaseToken", "leaseUntil", "sentAhead", "createdAt", "updatedAt"],
});

export const Property = model({
  table: "properties",
  columns: {
    id: "uuid", propertyGroupId: "uuid", name: "text", code: "text", kind: "enum", timezone: "text", countryCode: "text", city: "text",
    addressLine: "text?", currency: "text", roomCount: "int?", seatCount: "int?", createdAt: "instant", updatedAt: "instant",
  },
  internal: ["propertyGroupId"],
});

export const Integration = model({
  table: "integrations",
  columns: {
    id: "uuid", propertyGroupId: "uuid", propertyId: "uuid", provider: "text", name: "text", status: "enum", statusDetail: "text?",
    sourceRef: "text", lastSyncedAt: "instant?", createdAt: "instant", updatedAt: "instant",
  },
  internal: ["propertyGroupId"],
});

export const Channel = model({
  table: "channels",
  columns: {
    id: "uuid", propertyGroupId: "uuid", propertyId: "uuid?", integrationId: "uuid?", sourceId: "text?", code: "text", name: "text",
    kind: "text", active: "boolean", createdAt: "instant", updatedAt: "instant",
  },
  internal: ["propertyGroupId"],
});

export const Space = model({
  table: "spaces",
  columns: {
    id: "uuid", propertyGroupId: "uuid", propertyId: "uuid", integrationId: "uuid?", sourceId: "text?", code: "text", name: "text",
    kind: "text", capacity: "int", floor: "text?", active: "boolean", createdAt: "instant", updatedAt: "instant",
  },
  internal: ["propertyGroupId"],
});

export const LoyaltyProgram = model({
  table: "loyalty_programs",
  columns: {
    id: "uuid", propertyGroupId: "uuid", name: "text", code: "text", pointsName: "text", tiers: "json", active: "boolean",
    createdAt: "instant", updatedAt: "instant",
  },
  internal: ["propertyGroupId"],
});

/** The models data/ reads in SQL, by their Prisma name. */
export const MODELS = {
  GuestProfile, MasterProfile, MasterProfileLink, MasterProfileCount, Reservation, Transaction, Event, GuestTable, TableMember, DestinationBinding,
  Review, LoyaltyMember, ConsentObservation, Action, Property, Integration, Channel, Space, LoyaltyProgram,
} as const;

export type SqlModel = keyof typeof MODELS;

const modelOf = (model: SqlModel): Model => {
  if (!Object.hasOwn(MODELS, model)) throw new Error(`${model} is not tenant data: it cannot be read through a request's scoped SQL`);
  return MODELS[model] as unknown as Model;
};

/** The table of `model`. */
export const tableOf = (model: SqlModel): string => modelOf(model).table;

/** The column of `field` in `model`'s table; throws for a field the declaration does not hold. */
export function columnOf(model: SqlModel, field: string): string {
  const columns: Record<string, string> = modelOf(model).columns;
  if (!Object.hasOwn(columns, field)) throw new Error(`${model}.${field} has no declared column (data/models.ts)`);
  return columns[field];
}

/** `shape` narrowed to `fields`, in that order: a read that needs only some columns of a row. */
export function pick<M extends Model>(m: M, ...fields: (keyof M["specs"] & string)[]): RowShape {
  return Object.fromEntries(fields.map((f) => [f, KIND[baseOf(m.specs[f])] ?? "value"]));
}
