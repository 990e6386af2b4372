// The OpenAPI document: generated from the code, committed as openapi.yaml (with the client types
// in client/openapi.d.ts), complete, and saying per route what the route table says.
import { readFileSync } from "node:fs";
import { parse } from "yaml";
import { generateOpenApi, openApiPath, routeKey } from "../../src/api/openapi";
import { ROLLUP_DEPRECATION, routes } from "../../src/api/routes";
import { TYPES_PATH, YAML_PATH, renderTypes, renderYaml } from "../../scripts/openapi";
import { ContractValidator } from "../helpers/openapi-validate";

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const { document, gaps } = generateOpenApi();
const doc = document as Json;
const operationOf = (route: { method: string; path: string }) => doc.paths[openApiPath(route.path)][route.method.toLowerCase()];
const schemaOf = (ref: string) => doc.components.schemas[ref.split("/").pop()!];

describe("openapi.yaml", () => {
  it("is what `npm run openapi` writes from the code (run it after changing routes, operations or prose)", () => {
    expect(readFileSync(YAML_PATH, "utf8")).toBe(renderYaml().text);
  });

  it("and client/openapi.d.ts is openapi-typescript's output for it", () => {
    expect(readFileSync(TYPES_PATH, "utf8")).toBe(renderTypes());
  });

  it("parses back to the generated document", () => {
    expect(parse(readFileSync(YAML_PATH, "utf8"))).toEqual(JSON.parse(JSON.stringify(document)));
  });

  it("has prose for every route, parameter and record, and no clashing record names", () => {
    expect(gaps).toEqual([]);
  });

  it("is OpenAPI 3.1, version 1.0.0 (spec section 9), with the bearer scheme", () => {
    expect(doc.openapi).toBe("3.1.0");
    expect(doc.info.version).toBe("1.0.0");
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: "http", scheme: "bearer" });
  });
});

describe.each(routes.map((r) => [routeKey(r), r] as const))("%s", (_key, route) => {
  const op = operationOf(route);

  it("needs a bearer credential and names its scope", () => {
    expect(op.security).toEqual([{ bearerAuth: [] }]);
    expect(op["x-required-scope"]).toBe(route.scope);
    expect(op.description).toContain(`Requires the scope \`${route.scope}\`.`);
    expect(op.responses["403"].content["application/json"].example.scope).toBe(route.scope);
  });

  it("is named after the route's operation", () => {
    expect(op.operationId).toBe(route.operation.charAt(0).toLowerCase() + route.operation.slice(1));
  });

  it("documents the statuses the route can answer", () => {
    const expected = [String(route.status ?? 200), "400", "401", "403", ...(route.pathParams || route.bodyNotFound ? ["404"] : []), ...(route.method === "POST" ? ["413", "415"] : []), "429", "500", "503", "504"];
    expect(Object.keys(op.responses).sort()).toEqual(expected.sort());
  });

  it("lists exactly its path and query parameters, plus X-Property-Id and X-Request-Id", () => {
    const names = op.parameters.filter((p: Json) => p.name).map((p: Json) => `${p.in}:${p.name}`);
    const expected = [
      ...Object.keys(route.pathParams ?? {}).map((n) => `path:${n}`),
      ...Object.keys(route.query ?? {}).map((n) => `query:${n}`),
    ];
    expect(names).toEqual(expected);
    expect(op.parameters.filter((p: Json) => p.in === "path").every((p: Json) => p.required)).toBe(true);
    expect(op.parameters.slice(-2)).toEqual([{ $ref: "#/components/parameters/PropertyId" }, { $ref: "#/components/parameters/RequestId" }]);
  });

  it("describes its body exactly when it takes one", () => {
    if (!route.body) return expect(op.requestBody).toBeUndefined();
    const schema = op.requestBody.content["application/json"].schema;
    expect(Object.keys(schema.properties)).toEqual(Object.keys(route.body));
    expect(schema.required).toEqual(Object.entries(route.body).filter(([, s]) => s.required).map(([n]) => n));
  });
});

describe("envelopes (spec section 8)", () => {
  const page = (route: (typeof routes)[number]) => {
    const schema = operationOf(route).responses[String(route.status ?? 200)].content["application/json"].schema;
    return schema.$ref ? schemaOf(schema.$ref) : schema;
  };
  const keysetLists = routes.filter((r) => r.query?.cursor && r.path !== "/v1/events");
  // The guest lookup takes an offset to page a table's members, but answers people, not a page.
  const offsetLists = routes.filter((r) => (r.query?.offset || r.body?.offset) && r.operation !== "LookupGuests");

  it.each(keysetLists.map((r) => [routeKey(r), r] as const))("%s is a keyset page", (_key, route) => {
    const schema = page(route);
    expect(schema.required).toEqual(["data", "next_cursor", "has_more"]);
    expect(schema.properties.next_cursor.type).toEqual(["string", "null"]);
    expect(schema.properties.has_more.type).toBe("boolean");
    expect(schema.properties.data.type).toBe("array");
    // total_count exactly where include_total is accepted, and then optional and never null.
    if (route.query?.include_total) expect(schema.properties.total_count).toMatchObject({ type: "integer" });
    else expect(schema.properties.total_count).toBeUndefined();
  });

  it.each(offsetLists.map((r) => [routeKey(r), r] as const))("%s is an offset page", (_key, route) => {
    const schema = page(route);
    expect(schema.required).toEqual(["data", "has_more", "next_offset"]);
    expect(schema.properties.total_count).toMatchObject({ type: "integer" });
  });

  it("the event log carries mode, which is never rollup", () => {
    const schema = page(routes.find((r) => r.path === "/v1/events")!);
    expect(schema.required).toEqual(["data", "next_cursor", "has_more", "mode"]);
    expect(schema.properties.mode.enum).toEqual(["timeline", "latest"]);
  });

  it("get-by-id routes answer { data: record }", () => {
    for (const route of routes.filter((r) => r.envelope === "body" && r.status !== 204)) {
      const schema = page(route);
      expect(schema.required).toEqual(["data"]);
    }
  });

  it("the integration roster row has exactly the six fields of spec 2.1", () => {
    expect(schemaOf("Integration").required).toEqual(["id", "provider", "name", "property_id", "status", "source_ref"]);
    expect(schemaOf("Integration").additionalProperties).toBe(false);
  });
});

describe("parameters", () => {
  const events = operationOf({ method: "GET", path: "/v1/events" });
  const param = (name: string) => events.parameters.find((p: Json) => p.name === name);

  it("mode=rollup is deprecated (spec section 9)", () => {
    expect(param("mode").schema).toMatchObject({
      default: "timeline",
      oneOf: [{ enum: ["timeline", "latest"] }, { const: "rollup", deprecated: true }],
    });
  });

  it("limit has its default and lower bound; values above 500 are clamped, so no maximum", () => {
    expect(param("limit").schema).toEqual({ type: "integer", minimum: 1, default: 100 });
  });
});

describe("records, the spec's 'not shown' ones included", () => {
  it.each([
    "Property", "Integration", "IntegrationConnection", "Guest", "MasterProfile", "Reservation", "Transaction",
    "ConsentObservation", "EffectiveConsent", "Action", "Review", "ReviewSummary", "LoyaltyProgram", "LoyaltyTier",
    "LoyaltyMember", "Channel", "Space", "Event", "Table", "TableMember", "DestinationBinding", "Error",
  ])("%s is a closed object with described members", (name) => {
    const schema = schemaOf(name);
    expect(schema.type).toBe("object");
    expect(schema.description).toEqual(expect.any(String));
    expect(schema.additionalProperties).toBe(false);
  });

  it("the destination binding has the fields of spec 2.2", () => {
    expect(schemaOf("DestinationBinding").required).toEqual([
      "id", "table_id", "connection_id", "provider", "remote_list_id", "state", "confirmed_seq", "log_head", "lag",
      "last_flush_at", "last_error", "last_flush_counts", "last_resync_run_handle", "guidance",
    ]);
  });

  it("the error body is { error, scope?, detail? } (spec 2.3)", () => {
    expect(schemaOf("Error")).toMatchObject({ required: ["error"], properties: { error: {}, scope: {}, detail: {} } });
  });
});


describe("examples: every operation, parameter and body, each valid against its schema", () => {
  const validator = new ContractValidator(JSON.parse(JSON.stringify(document)));
  const operations = Object.entries(doc.paths as Record<string, Json>).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]) => [`${method.toUpperCase()} ${path}`, op as Json] as const),
  );
  const resolve = (node: Json): Json => (node.$ref ? doc.components.parameters[node.$ref.split("/").pop()] : node);

  it("there are 43 /v1 operations (8 of them webhook endpoints, 1 the event stream) and 8 service ones", () => {
    expect(operations.filter(([key]) => key.includes(" /v1/"))).toHaveLength(43);
    expect(operations.filter(([key]) => key.includes(" /v1/webhook-endpoints"))).toHaveLength(8);
    expect(operations.map(([key]) => key)).toContain("GET /v1/events/stream");
    expect(operations).toHaveLength(51);
  });

  // 200, or a webhook route's 201 (create); DELETE's 204 has no body.
  const success = operations.filter(([, op]) => Object.keys(op.responses).some((s) => /^20[01]$/.test(s)));
  it.each(success)("%s: an example of its 2xx answer that its schema accepts", (key, op) => {
    const [media] = Object.values((op.responses["200"] ?? op.responses["201"]).content as Record<string, Json>);
    const values = media.examples ? Object.values(media.examples as Record<string, Json>).map((e) => e.value) : [media.example];
    for (const value of values) {
      expect(value).toBeDefined();
      expect(validator.checkValue(`${key} 200`, media.schema, value)).toEqual([]);
    }
  });

  it.each(operations)("%s: an example for every parameter and for its body, each valid", (key, op) => {
    for (const parameter of (op.parameters as Json[]).map(resolve)) {
      expect([parameter.name, parameter.example]).toEqual([parameter.name, expect.anything()]);
      expect(validator.checkValue(`${key} ${parameter.name}`, parameter.schema, parameter.example)).toEqual([]);
    }
    if (!op.requestBody) return;
    const media = op.requestBody.content["application/json"];
    expect(media.example).toEqual(expect.any(Object));
    expect(validator.checkValue(`${key} body`, media.schema, media.example)).toEqual([]);
  });

  it("the preview's body example is a real filter document, not {}, and its answer has no added_at", () => {
    const preview = operationOf({ method: "POST", path: "/v1/tables/preview" });
    expect(Object.keys(preview.requestBody.content["application/json"].example.filter_doc)).toEqual(["and"]);
    expect(preview.responses["200"].content["application/json"].example.data[0].added_at).toBeNull();
  });

  it("a get-by-id example shows the record its id parameter names", () => {
    for (const route of routes.filter((r) => r.envelope === "body" && r.pathParams?.id && r.method === "GET" && !r.path.endsWith("/connection") && !r.path.endsWith("/links") && !r.path.endsWith("/reachability"))) {
      const op = operationOf(route);
      const id = op.parameters.find((p: Json) => p.name === "id").example;
      expect([routeKey(route), op.responses["200"].content["application/json"].example.data.id]).toEqual([routeKey(route), id]);
    }
  });
});

describe("servers: importable by Postman, Bruno and openapi-generator", () => {
  it("the first entry is absolute, with variables whose defaults make http://localhost:3000", () => {
    const [first] = doc.servers;
    const url = first.url.replace(/\{(\w+)\}/g, (_: string, name: string) => first.variables[name].default);
    expect(new URL(url).origin).toBe("http://localhost:3000");
    expect(first.variables.scheme.enum).toEqual(["http", "https"]);
  });

  it("the relative entry stays, for the document served at GET /openapi.json", () => {
    expect(doc.servers.map((s: Json) => s.url)).toContain("/");
  });
});

describe("mode=rollup deprecation (RFC 9745, RFC 8594)", () => {
  const events = operationOf({ method: "GET", path: "/v1/events" });

  it("GET /v1/events documents Deprecation and Sunset on its 200, with the dates the route sends", () => {
    expect(events.responses["200"].headers).toMatchObject({
      Deprecation: { $ref: "#/components/headers/Deprecation" },
      Sunset: { $ref: "#/components/headers/Sunset" },
    });
    expect(doc.components.headers.Deprecation.example).toBe(`@${ROLLUP_DEPRECATION.deprecatedAt.getTime() / 1000}`);
    expect(doc.components.headers.Sunset.example).toBe(ROLLUP_DEPRECATION.sunsetAt.toUTCString());
    expect(doc.info.description).toContain(`Sunset: ${ROLLUP_DEPRECATION.sunsetAt.toUTCString()}`);
  });

  it("no other operation does", () => {
    const others = routes.filter((r) => r.path !== "/v1/events").map((r) => operationOf(r).responses[String(r.status ?? 200)].headers);
    expect(others.filter((h) => h.Deprecation || h.Sunset)).toEqual([]);
  });
});
