// Custom scalars. Input parsing rejects bad values with `invalid_request` and an example.
import { GraphQLScalarType, Kind, type ValueNode } from "graphql";
import { isUuid, parseDay, parseInstantOrDay } from "../validate";

// Re-exported: test/unit/params.test.ts imports the parsers from here.
import { echo, invalidRequest } from "../errors";

function stringLiteral(ast: ValueNode): unknown {
  return ast.kind === Kind.STRING ? ast.value : undefined;
}

function parseUuid(value: unknown): string {
  if (typeof value !== "string" || !isUuid(value)) {
    throw invalidRequest(`expected a uuid, e.g. 3f1c2a9e-7d4b-4c1a-9e2f-5b6a7c8d9e0f; got ${echo(value)}`);
  }
  return value.toLowerCase();
}

// Every row data/ hands out carries instants and dates as the API's ISO text already (data/sql.ts
// renders them in SQL, data/prisma-rows.ts converts Prisma's), so output passes through as it is.
export const DateTime = new GraphQLScalarType<Date, string>({
  name: "DateTime",
  serialize: (value) => value as string,
  // A date is accepted too (issue 42): its UTC midnight, a whole day as a range's exclusive end.
  parseValue: parseInstantOrDay,
  parseLiteral: (ast) => parseInstantOrDay(stringLiteral(ast)),
});

export const DateScalar = new GraphQLScalarType<Date, string>({
  name: "Date",
  serialize: (value) => value as string,
  // An instant is accepted too (issue 42): the date it is written in (its own offset).
  parseValue: parseDay,
  parseLiteral: (ast) => parseDay(stringLiteral(ast)),
});

export const UUID = new GraphQLScalarType<string, string>({
  name: "UUID",
  serialize: (value) => String(value),
  parseValue: parseUuid,
  parseLiteral: (ast) => parseUuid(stringLiteral(ast)),
});

export const JSONScalar = new GraphQLScalarType({
  name: "JSON",
  serialize: (value) => value,
  parseValue: (value) => value,
  parseLiteral: function literal(ast): unknown {
    switch (ast.kind) {
      case Kind.STRING:
      case Kind.BOOLEAN:
        return ast.value;
      case Kind.INT:
      case Kind.FLOAT:
        return Number(ast.value);
      case Kind.NULL:
        return null;
      case Kind.LIST:
        return ast.values.map(literal);
      case Kind.OBJECT:
        return Object.fromEntries(ast.fields.map((f) => [f.name.value, literal(f.value)]));
      default:
        throw invalidRequest("JSON literals cannot contain variables");
    }
  },
});

/** 64-bit integers from bigint columns; JSON numbers are exact up to 2^53, far above any amount. */
function parseLong(value: unknown): bigint {
  if (typeof value === "number" && Number.isSafeInteger(value)) return BigInt(value);
  if (typeof value === "string" && /^-?\d{1,18}$/.test(value)) return BigInt(value);
  throw invalidRequest(`expected a 64-bit integer; got ${echo(value)}`);
}

export const Long = new GraphQLScalarType<bigint, number>({
  name: "Long",
  serialize: (value) => Number(value as bigint | number),
  parseValue: parseLong,
  parseLiteral: (ast) => parseLong(ast.kind === Kind.INT || ast.kind === Kind.STRING ? ast.value : undefined),
});
