// schema.graphql documents itself: every type, field, argument, enum value and input field has a
// description, and where a /v1 twin exists the GraphQL text is the OpenAPI text. Records, their
// members and filter parameters are read from schema.graphql by src/openapi; arguments (paging, ids)
// repeat descriptions.ts PARAMETERS, which is why they are compared here.
import {
  buildASTSchema,
  getNamedType,
  isEnumType,
  isInputObjectType,
  isIntrospectionType,
  isObjectType,
  isSpecifiedDirective,
  isSpecifiedScalarType,
  Kind,
  parse,
  type GraphQLInputObjectType,
  type OperationDefinitionNode,
} from "graphql";
import { generateOpenApi, openApiPath, routeKey } from "../../src/api/openapi";
import { loadTypeDefs } from "../../src/graphql/schema-source";
import { prepareOperations } from "../../src/api/execute";
import { routes } from "../../src/api/routes";

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const schema = buildASTSchema(parse(loadTypeDefs()));
const doc = generateOpenApi().document as Json;

/** Every place schema.graphql can carry a description, by schema coordinate, with its text. */
function describable(): [string, string | null | undefined][] {
  const out: [string, string | null | undefined][] = [];
  for (const type of Object.values(schema.getTypeMap())) {
    if (isIntrospectionType(type) || isSpecifiedScalarType(type)) continue;
    out.push([type.name, type.description]);
    if (isObjectType(type)) {
      for (const field of Object.values(type.getFields())) {
        out.push([`${type.name}.${field.name}`, field.description]);
        for (const arg of field.args) out.push([`${type.name}.${field.name}(${arg.name}:)`, arg.description]);
      }
    }
    if (isInputObjectType(type)) for (const field of Object.values(type.getFields())) out.push([`${type.name}.${field.name}`, field.description]);
    if (isEnumType(type)) for (const value of type.getValues()) out.push([`${type.name}.${value.name}`, value.description]);
  }
  for (const directive of schema.getDirectives().filter((d) => !isSpecifiedDirective(d))) {
    out.push([`@${directive.name}`, directive.description]);
    for (const arg of directive.args) out.push([`@${directive.name}(${arg.name}:)`, arg.description]);
  }
  return out;
}

describe("schema.graphql descriptions", () => {
  it("none is missing: every type, field, argument, enum value, input field and directive", () => {
    const all = describable();
    expect(all.length).toBeGreaterThan(800);
    expect(all.filter(([, text]) => !text?.trim()).map(([coordinate]) => coordinate)).toEqual([]);
  });
});

/** The GraphQL argument or input field a route's variable feeds, e.g. `filter.sourceId` → GuestFilter.sourceId. */
function twinOf(op: OperationDefinitionNode, variablePath: string): { coordinate: string; description: string | null | undefined } {
  const [variable, ...members] = variablePath.split(".");
  const root = schema.getRootType(op.operation)!;
  for (const selection of op.selectionSet.selections) {
    if (selection.kind !== Kind.FIELD) continue;
    const argument = selection.arguments?.find((a) => a.value.kind === Kind.VARIABLE && a.value.name.value === variable);
    if (!argument) continue;
    const field = root.getFields()[selection.name.value];
    const arg = field.args.find((a) => a.name === argument.name.value)!;
    if (members.length === 0) return { coordinate: `${root.name}.${field.name}(${arg.name}:)`, description: arg.description };
    let input = getNamedType(arg.type) as GraphQLInputObjectType;
    let coordinate = "";
    let description: string | null | undefined;
    for (const member of members) {
      const inputField = input.getFields()[member];
      [coordinate, description] = [`${input.name}.${member}`, inputField.description];
      input = getNamedType(inputField.type) as GraphQLInputObjectType;
    }
    return { coordinate, description };
  }
  throw new Error(`${op.name?.value}: no root field takes $${variable}`);
}

const camel = (wire: string) => wire.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase());

describe("a GraphQL description is the OpenAPI description of its /v1 twin", () => {
  const operations = prepareOperations(schema);

  it.each(routes.map((r) => [routeKey(r), r] as const))("%s: each parameter and body member", (_key, route) => {
    const op = operations.get(route.operation)!.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION)!;
    const operation = doc.paths[openApiPath(route.path)][route.method.toLowerCase()];
    const documented = (name: string, where: string) =>
      where === "body"
        ? operation.requestBody.content["application/json"].schema.properties[name].description
        : operation.parameters.find((p: Json) => p.name === name && p.in === where).description;
    const specs = [
      ...Object.entries(route.pathParams ?? {}).map(([name, spec]) => [name, spec.variable, "path"]),
      ...Object.entries(route.query ?? {}).map(([name, spec]) => [name, spec.variable, "query"]),
      ...Object.entries(route.body ?? {}).map(([name, spec]) => [name, spec.variable, "body"]),
    ];
    for (const [name, variable, where] of specs) {
      // `expand` feeds an @include, not an argument: its prose is descriptions.ts PARAMETERS alone.
      if (name === "expand") continue;
      const twin = twinOf(op, variable);
      expect([name, twin.coordinate, documented(name, where)]).toEqual([name, twin.coordinate, twin.description]);
    }
  });

  const records = Object.entries(doc.components.schemas as Record<string, Json>).filter(([name]) => {
    const type = schema.getType(name);
    return isObjectType(type) && !("nodes" in type.getFields());
  });

  it("there are records to compare (every non-page record named after its type)", () => {
    expect(records.map(([name]) => name)).toEqual(expect.arrayContaining(["Guest", "Reservation", "DestinationBinding", "FlushCounts"]));
  });

  it.each(records)("record %s and its members", (name, component) => {
    const type = schema.getType(name);
    if (!isObjectType(type)) throw new Error(`${name} is not a GraphQL object type`);
    expect(component.description).toBe(type.description);
    for (const [member, property] of Object.entries(component.properties as Record<string, Json>)) {
      const field = type.getFields()[camel(member)];
      expect([member, property.description]).toEqual([member, field?.description]);
    }
  });
});
