// Every HTTP response the suite produces is checked against the committed openapi.yaml: the status
// must be documented for the route, documented headers present and well-formed, and the body must
// match the schema (Ajv, JSON Schema 2020-12). So a test fails as soon as code and contract drift.
//
// Responses the document describes only in prose (info.description) are checked against that prose:
// an unknown path answers 404 not_found, a known path with another method 405 method_not_allowed
// with Allow, and /v1 bodies are parsed (400, 413, 415) before routing. /graphql, /mcp and the routes
// in UNDOCUMENTED_ROUTES have contracts of their own and are skipped.
import { readFileSync } from "node:fs";
import path from "node:path";
import Ajv2020, { type ValidateFunction } from "ajv/dist/2020";
import addFormats from "ajv-formats";
import type request from "supertest";
import { parse } from "yaml";
import { UNDOCUMENTED_ROUTES } from "../../src/api/openapi";

type Json = Record<string, unknown>;

export interface ObservedResponse {
  method: string;
  /** The request's path, with or without its query string. */
  url: string;
  status: number;
  /** Header names in lower case. */
  headers: Record<string, string | undefined>;
  contentType: string | undefined;
  /** The parsed JSON body, or the text of any other body. */
  body: unknown;
}

const DOCUMENT_PATH = path.resolve(__dirname, "../../openapi.yaml");
const DEFS = "urn:gcs:openapi";
const HTTP_METHODS = ["get", "post", "put", "patch", "delete", "del", "head", "options"];

interface Route {
  template: string;
  pattern: RegExp;
  params: number;
  operations: Record<string, Json>;
}

export class ContractValidator {
  private readonly ajv: Ajv2020;
  private readonly routes: Route[];
  private readonly compiled = new Map<string, ValidateFunction>();
  /** The document with schema references pointed into Ajv's copy of components.schemas. */
  private readonly rewrittenDocument: Json;
  /** How many responses were checked against a documented operation (the tests assert it grows). */
  checked = 0;

  constructor(readonly document: Json) {
    // The document's schemas become $defs of one schema, so every $ref resolves inside Ajv.
    const rewritten = JSON.parse(JSON.stringify(document).replaceAll('"#/components/schemas/', `"${DEFS}#/$defs/`)) as Json;
    this.ajv = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true });
    addFormats(this.ajv);
    this.ajv.addFormat("int32", { type: "number", validate: (n: number) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31 });
    this.ajv.addSchema({ $id: DEFS, $defs: (rewritten.components as Json).schemas as Json });
    this.rewrittenDocument = rewritten;
    this.routes = Object.entries(rewritten.paths as Record<string, Record<string, Json>>).map(([template, operations]) => ({
      template,
      pattern: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{\w+\}/g, "[^/]+")}/?$`, "i"),
      params: (template.match(/\{/g) ?? []).length,
      operations,
    }));
    // Literal segments win over parameters, as in Express's route order (/v1/reviews/summary).
    this.routes.sort((a, b) => a.params - b.params);
  }

  /** Problems with one response; empty when it matches the document. */
  check(res: ObservedResponse): string[] {
    const method = res.method.toUpperCase();
    const pathname = safeDecode(res.url.split("?")[0]);
    if (pathname.startsWith("/graphql") || pathname === "/mcp" || UNDOCUMENTED_ROUTES[`${method} ${pathname}`]) return [];
    const matching = this.routes.filter((r) => r.pattern.test(pathname));
    const route = matching.find((r) => r.operations[method.toLowerCase()]);
    if (!route) return this.checkUnrouted(res, pathname, matching.length > 0);
    this.checked++;
    const operation = route.operations[method.toLowerCase()];
    const key = `${method} ${route.template} → ${res.status}`;
    const response = this.resolve((operation.responses as Json)[String(res.status)]);
    if (!response) return [`${key}: status ${res.status} is not documented for this operation`];
    return [...this.checkHeaders(key, response, res), ...this.checkBody(key, response, res)];
  }

  /** Throws with every problem, so the test that made the request fails. */
  assert(res: ObservedResponse): void {
    const problems = this.check(res);
    if (problems.length === 0) return;
    const body = typeof res.body === "string" ? res.body.slice(0, 300) : JSON.stringify(res.body)?.slice(0, 600);
    throw new Error(`response does not match openapi.yaml:\n  ${problems.join("\n  ")}\n  ${res.method.toUpperCase()} ${res.url} → ${res.status} ${body}`);
  }

  /** Problems with a value (an example) against a schema taken from the document; empty when it matches. */
  checkValue(key: string, schema: Json, value: unknown): string[] {
    const rewritten = JSON.parse(JSON.stringify(schema).replaceAll('"#/components/schemas/', `"${DEFS}#/$defs/`)) as Json;
    const validate = this.compile(`value: ${key}`, rewritten);
    return validate(value) ? [] : [`${key}: ${this.errorsText(validate)}`];
  }

  /** A fetch Response (the body is read from a clone, so the caller can still read it). */
  async assertFetch(method: string, url: string, response: Response): Promise<void> {
    const contentType = response.headers.get("content-type") ?? undefined;
    const text = await response.clone().text();
    const headers: Record<string, string> = {};
    response.headers.forEach((value, name) => (headers[name.toLowerCase()] = value));
    const body = contentType?.includes("json") && text ? JSON.parse(text) : text;
    const { pathname, search } = new URL(url, "http://localhost");
    this.assert({ method, url: pathname + search, status: response.status, headers, contentType, body });
  }

  private checkUnrouted(res: ObservedResponse, pathname: string, knownPath: boolean): string[] {
    // A CORS preflight of an allowlisted origin (described in info.description, not as operations).
    const preflight = res.method.toUpperCase() === "OPTIONS" && res.status === 204 && res.headers["access-control-allow-origin"];
    if (preflight) return knownPath ? [] : [`${res.method} ${pathname}: a preflight answered for a path the document does not have`];
    const problems = this.errorBody(res);
    const beforeRouting = pathname.startsWith("/v1/") && (res.status === 400 || res.status === 413 || res.status === 415);
    if (beforeRouting) return problems;
    if (knownPath) {
      if (res.status !== 405) problems.push(`${res.method} ${pathname}: not an operation of a known path, so 405 was expected`);
      if (!res.headers.allow) problems.push(`${res.method} ${pathname}: a 405 needs an Allow header`);
    } else if (res.status !== 404) {
      problems.push(`${res.method} ${pathname}: no such path in the document, so 404 not_found was expected`);
    }
    return problems;
  }

  /** An answer outside the operations is still an Error body. */
  private errorBody(res: ObservedResponse): string[] {
    const validate = this.compile("Error", { $ref: `${DEFS}#/$defs/Error` });
    return validate(res.body) ? [] : [`${res.method} ${res.url}: not an Error body: ${this.errorsText(validate)}`];
  }

  private checkHeaders(key: string, response: Json, res: ObservedResponse): string[] {
    const problems: string[] = [];
    for (const [name, ref] of Object.entries((response.headers ?? {}) as Json)) {
      const header = this.resolve(ref)!;
      const value = res.headers[name.toLowerCase()];
      if (value === undefined) {
        if (header.required) problems.push(`${key}: header ${name} is missing`);
        continue;
      }
      const schema = header.schema as Json;
      const typed = schema.type === "integer" && /^-?\d+$/.test(value) ? Number(value) : value;
      const validate = this.compile(`${key} header ${name}`, schema);
      if (!validate(typed)) problems.push(`${key}: header ${name}=${value}: ${this.errorsText(validate)}`);
    }
    return problems;
  }

  private checkBody(key: string, response: Json, res: ObservedResponse): string[] {
    const content = response.content as Record<string, Json> | undefined;
    if (!content) return [];
    const mediaType = res.contentType?.split(";")[0].trim();
    const media = mediaType ? content[mediaType] : undefined;
    if (!media) return [`${key}: content type ${res.contentType} is not one of ${Object.keys(content).join(", ")}`];
    const validate = this.compile(`${key} ${mediaType}`, media.schema as Json);
    return validate(res.body) ? [] : [`${key}: body: ${this.errorsText(validate, "body")}`];
  }

  /** The first few errors: one bad field repeats on every row of a page. */
  private errorsText(validate: ValidateFunction, dataVar = "value"): string {
    return this.ajv.errorsText(validate.errors?.slice(0, 5), { dataVar });
  }

  private compile(key: string, schema: Json): ValidateFunction {
    let validate = this.compiled.get(key);
    if (!validate) this.compiled.set(key, (validate = this.ajv.compile(schema)));
    return validate;
  }

  /** Follows a `#/components/...` reference of the document (responses, headers). */
  private resolve(node: unknown): Json | undefined {
    const ref = (node as Json | undefined)?.$ref;
    if (typeof ref !== "string") return node as Json | undefined;
    return ref
      .slice(2)
      .split("/")
      .reduce<unknown>((at, part) => (at as Json)[part], this.rewrittenDocument) as Json;
  }
}

/** A path as Express matches it; a malformed escape stays as sent (Express answers 400 or 404). */
function safeDecode(path: string): string {
  try {
    return decodeURI(path);
  } catch {
    return path;
  }
}

let shared: ContractValidator | undefined;

/** One validator per test file, on the committed openapi.yaml. */
export function contract(): ContractValidator {
  return (shared ??= new ContractValidator(parse(readFileSync(DOCUMENT_PATH, "utf8"))));
}

type Agent = ReturnType<typeof request>;

/** supertest with every response checked against the document before the test's own assertions. */
export function validated(agent: Agent): Agent {
  return new Proxy(agent, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof prop !== "string" || !HTTP_METHODS.includes(prop) || typeof value !== "function") return value;
      const method = prop === "del" ? "DELETE" : prop.toUpperCase();
      return (url: string, ...rest: unknown[]) =>
        value.call(target, url, ...rest).expect((res: request.Response) =>
          contract().assert({ method, url, status: res.status, headers: res.headers, contentType: res.headers["content-type"], body: res.type === "application/json" ? res.body : res.text }),
        );
    },
  });
}
