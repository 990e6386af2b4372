// Builds the OpenAPI 3.1 document from the code, so it cannot drift: paths, parameters and scopes
// from the route table (src/api/routes.ts), response schemas from each route's GraphQL operation
// walked against schema.graphql, error statuses from ERROR_STATUS. Only prose and examples are
// hand-written: records, their members and filter parameters are described in schema.graphql, the
// rest in descriptions.ts; examples in examples.ts. Missing prose or examples never break the
// service: they are collected in `gaps`, which a unit test requires to be empty.
import {
  buildASTSchema,
  getNamedType,
  isEnumType,
  isInputObjectType,
  Kind,
  parse,
  typeFromAST,
  type FragmentDefinitionNode,
  type GraphQLInputType,
  type GraphQLObjectType,
  type DocumentNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from "graphql";
import { loadTypeDefs } from "../../graphql/schema-source";
import { prepareOperations } from "../execute";
import { asJsonValue, type BodySpec, type ParamSpec } from "../params";
import { routes, type RouteSpec } from "../routes";
import { API_VERSION, ENVELOPE_MEMBERS, INFO_DESCRIPTION, PARAMETERS, RECORDS, ROUTES, TAGS, type RouteProse } from "../descriptions";
import { ENVELOPE_EXAMPLES, ID_EXAMPLES, IDS, RECORD_EXAMPLES } from "../examples";
import { COMMON_HEADERS, ERROR_SCHEMA, HEADER_COMPONENTS, RATE_LIMIT_HEADERS, errorRef, errorResponseComponents, forbiddenResponse } from "./errors";
import { Components, componentName, fieldsOf, objectSchema, omitNullMembers, type JsonSchema, type WalkContext } from "../selection-schema";
import { serviceOperations } from "./service-routes";
import { webhookOperations, webhookPayloads } from "./webhooks";

export type OpenApiDocument = Record<string, unknown> & { paths: Record<string, Record<string, OperationObject>> };
export type OperationObject = Record<string, unknown> & { responses: Record<string, unknown> };

export interface Generated {
  document: OpenApiDocument;
  /** Prose that is missing and names that clash: empty when the document is complete. */
  gaps: string[];
}

/** `/v1/guests/:id` → `/v1/guests/{id}` */
export const openApiPath = (expressPath: string) => expressPath.replace(/:(\w+)/g, "{$1}");

export const routeKey = (route: Pick<RouteSpec, "method" | "path">) => `${route.method} ${openApiPath(route.path)}`;

export function generateOpenApi(): Generated {
  const schema = buildASTSchema(parse(loadTypeDefs()));
  const operations = prepareOperations(schema);
  const gaps: string[] = [];
  const components = new Components((name, shape) => RECORDS[name] ?? pageDescription(shape));
  const paths: OpenApiDocument["paths"] = {};

  // Webhook endpoints are written out in webhooks.ts (a secret shown once, 201 and 204, payloads);
  // a unit test holds them to the route table's paths, methods, operations and scopes.
  const handWritten = webhookOperations();
  const generated = routes.filter((route) => !handWritten[openApiPath(route.path)]?.[route.method.toLowerCase()]);
  for (const route of generated) {
    const document = operations.get(route.operation);
    if (!document) throw new Error(`route ${routeKey(route)} names unknown operation ${route.operation}`);
    const op = document.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION)!;
    const fragments = new Map(
      document.definitions.filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION).map((f) => [f.name.value, f]),
    );
    const walk: WalkContext = { fragments, components, envelopeMember: (name) => ENVELOPE_MEMBERS[name] };
    const prose = ROUTES[routeKey(route)] ?? missingRoute(route, gaps);
    (paths[openApiPath(route.path)] ??= {})[route.method.toLowerCase()] = routeOperation(route, prose, schema, op, walk, gaps);
  }
  // Response examples are composed once every record component exists.
  for (const route of generated) {
    const media = (paths[openApiPath(route.path)][route.method.toLowerCase()].responses["200"] as { content: Record<string, JsonSchema> }).content["application/json"];
    const value = ROUTES[routeKey(route)]?.responseExample ?? exampleOf(media.schema as JsonSchema, components.schemas, routeKey(route), gaps);
    const more = ROUTES[routeKey(route)]?.examples;
    if (more) media.examples = { typical: { summary: ROUTES[routeKey(route)].response, value }, ...more };
    else media.example = value;
  }
  for (const [path, methods] of Object.entries(serviceOperations())) paths[path] = methods;
  for (const [path, methods] of Object.entries(handWritten)) paths[path] = methods; // issue 29

  for (const name of components.schemas.keys()) if (!components.schemas.get(name)!.description) gaps.push(`record ${name}: no description`);
  gaps.push(...components.clashes);
  const schemas = Object.fromEntries([...components.schemas.entries(), ["Error", { description: RECORDS.Error, ...ERROR_SCHEMA }]].sort(([a], [b]) => (a < b ? -1 : 1)));

  return {
    gaps,
    document: {
      openapi: "3.1.0",
      info: {
        title: "Guest Context Service API",
        version: API_VERSION,
        summary: "Read-only guest data for hotel and restaurant groups.",
        description: INFO_DESCRIPTION,
        license: { name: "UNLICENSED" },
      },
      // Absolute first: Postman, Bruno and openapi-generator take the first entry as the base URL and
      // cannot resolve a relative one. The relative entry serves readers of GET /openapi.json.
      servers: [
        {
          url: "{scheme}://{host}",
          description: "A running instance; `npm start` serves http://localhost:3000.",
          variables: {
            scheme: { enum: ["http", "https"], default: "http", description: "https behind a TLS-terminating proxy." },
            host: { default: "localhost:3000", description: "Host name and port of the instance." },
          },
        },
        { url: "/", description: "The address this document is served from." },
      ],
      tags: [...TAGS, { name: "Webhooks", description: "Endpoints that receive the event log as signed POSTs (Standard Webhooks 1.0)." }],
      paths,
      webhooks: webhookPayloads(),
      components: {
        securitySchemes: {
          bearerAuth: {
            type: "http",
            scheme: "bearer",
            description:
              "A personal API key (`gcs_…`), a partner access token (`gcsp_…`), a web-app session JWT or a static token. " +
              "Each route names the scope it needs in `x-required-scope`.",
          },
        },
        parameters: {
          PropertyId: {
            name: "X-Property-Id",
            in: "header",
            required: false,
            description:
              "Narrows this request to one property of the caller's group. Not a uuid (an empty value too): `400 invalid_request`; outside the " +
              "group or sent with a session token: `403 forbidden`. A property-pinned API key ignores it.",
            schema: { type: "string", format: "uuid" },
            example: IDS.property,
          },
          RequestId: {
            name: "X-Request-Id",
            in: "header",
            required: false,
            description: "Your id for this request (1–128 of `A-Z a-z 0-9 _ . : -`), echoed in the response; otherwise one is generated.",
            schema: { type: "string" },
            example: "crm-sync:2026-03-14:0042",
          },
        },
        headers: HEADER_COMPONENTS,
        responses: errorResponseComponents(),
        schemas,
      },
    },
  };
}

export interface ArgumentDoc {
  description: string;
  /** The JSON Schema the OpenAPI document gives the parameter, with values as JSON types (booleans as booleans). */
  schema: JsonSchema;
  required: boolean;
}

/**
 * A route's path, query and body parameters as the OpenAPI document describes them (same prose, same
 * bounds and enum values), for the MCP tools that take them as arguments.
 */
export function routeArguments(route: RouteSpec, schema: GraphQLSchema, document: DocumentNode): Record<string, ArgumentDoc> {
  const op = document.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION)!;
  const prose = ROUTES[routeKey(route)] ?? missingRoute(route, []);
  const specs: [string, ParamSpec | BodySpec, boolean][] = [
    ...Object.entries(route.pathParams ?? {}).map(([name, spec]) => [name, spec, true] as [string, ParamSpec, boolean]),
    ...Object.entries(route.query ?? {}).map(([name, spec]) => [name, spec, spec.required === true] as [string, ParamSpec, boolean]),
    ...Object.entries(route.body ?? {}).map(([name, spec]) => [name, spec, spec.required === true] as [string, BodySpec, boolean]),
  ];
  return Object.fromEntries(
    specs.map(([name, spec, required]) => {
      const input = inputOf(schema, op, spec.variable);
      const doc: ArgumentDoc = {
        description: parameterDescription(name, route, prose, input, []),
        schema: parameterSchema(name, asJsonValue(spec.schema()), input?.type),
        required,
      };
      return [name, doc];
    }),
  );
}

function missingRoute(route: RouteSpec, gaps: string[]): RouteProse {
  gaps.push(`route ${routeKey(route)}: no prose in descriptions.ts`);
  return { tag: "Undocumented", summary: routeKey(route), description: routeKey(route), response: "OK" };
}

function routeOperation(
  route: RouteSpec,
  prose: RouteProse,
  schema: GraphQLSchema,
  op: OperationDefinitionNode,
  walk: WalkContext,
  gaps: string[],
): OperationObject {
  const operation: OperationObject = {
    operationId: route.operation.charAt(0).toLowerCase() + route.operation.slice(1),
    summary: prose.summary,
    description: `${prose.description}\n\nRequires the scope \`${route.scope}\`.`,
    tags: [prose.tag],
    "x-required-scope": route.scope,
    security: [{ bearerAuth: [] }],
    parameters: [
      ...parameters("path", route.pathParams, route, prose, schema, op, gaps),
      ...parameters("query", route.query, route, prose, schema, op, gaps),
      { $ref: "#/components/parameters/PropertyId" },
      { $ref: "#/components/parameters/RequestId" },
    ],
    responses: {},
  };
  if (route.body) operation.requestBody = requestBody(route.body, route, prose, schema, op, gaps);
  const deprecation = route.deprecatedValues
    ? { Deprecation: { $ref: "#/components/headers/Deprecation" }, Sunset: { $ref: "#/components/headers/Sunset" } }
    : {};
  operation.responses = {
    "200": {
      description: prose.response,
      headers: { ...COMMON_HEADERS, ...RATE_LIMIT_HEADERS, ...deprecation },
      content: { "application/json": { schema: responseSchema(route, schema, op, walk) } },
    },
    "400": errorRef(400),
    "401": errorRef(401),
    "403": forbiddenResponse(route.scope, prose.sessionOnly === true),
    ...(route.pathParams || route.bodyNotFound ? { "404": errorRef(404) } : {}),
    ...(route.method === "POST" ? { "413": errorRef(413), "415": errorRef(415) } : {}),
    "429": errorRef(429),
    "500": errorRef(500),
    "503": errorRef(503),
    "504": errorRef(504),
  };
  return operation;
}

/** The 200 body: the operation's data (`envelope: body`) or its single root field (`unwrap`). */
function responseSchema(route: RouteSpec, schema: GraphQLSchema, op: OperationDefinitionNode, walk: WalkContext): JsonSchema {
  const root = schema.getRootType(op.operation)!;
  if (route.envelope === "body") return omitNullMembers(objectSchema(root, op.selectionSet, walk), route.omitNull);
  const [node] = fieldsOf(op.selectionSet, walk.fragments);
  const type = getNamedType(root.getFields()[node.name.value].type) as GraphQLObjectType;
  const body = omitNullMembers(objectSchema(type, node.selectionSet!, walk), route.omitNull);
  return walk.components.ref(componentName(type, node.selectionSet!), body);
}

function parameters(
  location: "path" | "query",
  specs: Record<string, ParamSpec> | undefined,
  route: RouteSpec,
  prose: RouteProse,
  schema: GraphQLSchema,
  op: OperationDefinitionNode,
  gaps: string[],
) {
  return Object.entries(specs ?? {}).map(([name, spec]) => {
    const valueSchema = parameterSchema(name, spec.schema(), inputOf(schema, op, spec.variable)?.type);
    return {
      name,
      in: location,
      required: location === "path" || spec.required === true,
      description: parameterDescription(name, route, prose, inputOf(schema, op, spec.variable), gaps),
      // A list is sent comma-separated (expand=guest,guest), or as expand[]=guest.
      ...(spec.list ? { style: "form", explode: false } : {}),
      schema: valueSchema,
      example: parameterExample(name, route, prose, valueSchema, gaps),
    };
  });
}

/** The route's own example, the shared one, the id of the family, or an enum's first value. */
function parameterExample(name: string, route: RouteSpec, prose: RouteProse, schema: JsonSchema, gaps: string[]): unknown {
  const values = (Array.isArray(schema.oneOf) ? (schema.oneOf[0] as JsonSchema).enum : schema.enum) as unknown[] | undefined;
  const example =
    prose.parameterExamples?.[name] ?? (name === "id" ? ID_EXAMPLES[route.path.split("/:")[0]] : undefined) ?? PARAMETERS[name]?.example ?? values?.[0];
  if (example === undefined) gaps.push(`parameter ${name} of ${routeKey(route)}: no example`);
  return example;
}

/** A response body example: records from examples.ts, envelope members from ENVELOPE_EXAMPLES. */
function exampleOf(schema: JsonSchema, schemas: Map<string, JsonSchema>, at: string, gaps: string[]): unknown {
  if (typeof schema.$ref === "string") {
    const name = schema.$ref.split("/").pop()!;
    return RECORD_EXAMPLES[name] ?? exampleOf(schemas.get(name)!, schemas, name, gaps);
  }
  if (Array.isArray(schema.oneOf)) return exampleOf(schema.oneOf[0] as JsonSchema, schemas, at, gaps);
  if (schema.type === "array") return [exampleOf(schema.items as JsonSchema, schemas, `${at}[]`, gaps)];
  if (schema.type === "object" && schema.properties) {
    return Object.fromEntries(
      Object.entries(schema.properties as Record<string, JsonSchema>).map(([member, s]) => [
        member,
        Object.hasOwn(ENVELOPE_EXAMPLES, member) ? ENVELOPE_EXAMPLES[member] : exampleOf(s, schemas, `${at}.${member}`, gaps),
      ]),
    );
  }
  gaps.push(`${at}: no example; add the record to examples.ts`);
  return null;
}

function requestBody(
  specs: Record<string, BodySpec>,
  route: RouteSpec,
  prose: RouteProse,
  schema: GraphQLSchema,
  op: OperationDefinitionNode,
  gaps: string[],
) {
  const properties: Record<string, JsonSchema> = {};
  for (const [name, spec] of Object.entries(specs)) {
    const input = inputOf(schema, op, spec.variable);
    properties[name] = { description: parameterDescription(name, route, prose, input, gaps), ...parameterSchema(name, spec.schema(), input?.type) };
  }
  const required = Object.entries(specs).filter(([, s]) => s.required).map(([n]) => n);
  if (!prose.requestExample) gaps.push(`body of ${routeKey(route)}: no requestExample`);
  return {
    required: required.length > 0,
    content: {
      "application/json": {
        // Unknown members are a 400, so the body is closed.
        schema: { type: "object", required, properties, additionalProperties: false },
        example: prose.requestExample,
      },
    },
  };
}

function parameterDescription(
  name: string,
  route: RouteSpec,
  prose: RouteProse,
  input: { description?: string } | undefined,
  gaps: string[],
): string {
  const text = prose.parameters?.[name] ?? PARAMETERS[name]?.description ?? input?.description;
  if (!text) gaps.push(`parameter ${name} of ${routeKey(route)}: no description`);
  return text ?? name;
}

/**
 * The parser's schema, with the business-rule bounds and defaults of descriptions.ts, and deprecated
 * GraphQL enum values split into a deprecated branch (OpenAPI cannot deprecate one enum value).
 */
function parameterSchema(name: string, base: JsonSchema, input: GraphQLInputType | undefined): JsonSchema {
  const schema = { ...base, ...PARAMETERS[name]?.schema?.(base) };
  const named = input && getNamedType(input);
  if (!isEnumType(named)) return schema;
  const deprecated = named.getValues().filter((v) => v.deprecationReason);
  if (deprecated.length === 0) return schema;
  const { enum: _all, ...rest } = schema;
  return {
    ...rest,
    oneOf: [
      { enum: named.getValues().filter((v) => !v.deprecationReason).map((v) => v.name) },
      ...deprecated.map((v) => ({ const: v.name, deprecated: true, description: `Deprecated: ${v.deprecationReason}` })),
    ],
  };
}

/** The GraphQL input a parameter feeds (`filter.sourceId` → GuestFilter.sourceId), for its prose and enum. */
function inputOf(schema: GraphQLSchema, op: OperationDefinitionNode, variablePath: string) {
  const [root, ...members] = variablePath.split(".");
  const definition = op.variableDefinitions?.find((v) => v.variable.name.value === root);
  if (!definition) throw new Error(`operation ${op.name?.value} has no variable $${root}`);
  let type = typeFromAST(schema, definition.type) as GraphQLInputType | undefined;
  let description: string | undefined;
  for (const member of members) {
    const named = type && getNamedType(type);
    if (!isInputObjectType(named)) return undefined;
    const field = named.getFields()[member];
    if (!field) throw new Error(`${named.name} has no field ${member} (route parameter ${variablePath})`);
    type = field.type;
    description = field.description ?? undefined;
  }
  return type && { type, description };
}

/** Page components describe themselves from their envelope. */
function pageDescription(shape: JsonSchema): string | undefined {
  const members = Object.keys((shape.properties ?? {}) as object);
  if (members.includes("mode")) return "A page of the event log: keyset-paged in `timeline` mode, one page in `latest` mode.";
  if (members.includes("next_cursor")) return "A keyset page (spec section 8): follow `next_cursor` until it is null.";
  if (members.includes("next_offset")) return "An offset page (spec section 8): while `has_more`, send `next_offset` as `offset`.";
  return undefined;
}
