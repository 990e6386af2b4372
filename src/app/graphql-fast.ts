// The /graphql fast path: a query document Apollo has already parsed, validated and run without an
// error is run again without Apollo's per-request pipeline (its header map, plugin hooks, query
// hashing and document store). What a request still gets is what it gets from Apollo: the same
// context (made once), the plugins' per-request checks (input guard, variable-priced cost), the
// same executor (graphql/compiled.ts executeDocument: the response cap, recordOperation) and the
// same answer, byte for byte. Only a plain success is answered here; anything else is Apollo's:
// left to it before anything ran (a document not seen yet, an auth failure, a refusal, a batch,
// GET oddities, a persisted query Apollo does not hold), or, once executed with errors, handed to
// it with the result to format (compiled.ts answerWith), so nothing runs twice.
import type { NextFunction, Request, Response } from "express";
import type { ApolloServerPlugin } from "@apollo/server";
import { Kind, visit, BREAK, type DocumentNode, type ExecutionResult, type GraphQLSchema, type OperationDefinitionNode } from "graphql";
import type { RequestContext } from "../context";
import { answerWith, executeDocument } from "../graphql/compiled";
import { passesInputGuard } from "../graphql/input-guard";
import type { VariableCostCheck } from "../graphql/limits";
import { stringifyResult } from "../graphql/raw-json";

/** A document that succeeded through Apollo, as Apollo resolved it. */
interface Known {
  document: DocumentNode;
  operation: OperationDefinitionNode;
  /** sha256 of the text (Apollo's queryHash): what a persisted query's hash must be. */
  hash: string;
}

/** Distinct document texts kept, and their total length (a document's AST is some tens of times its text). */
const MAX_DOCUMENTS = 1000;
const MAX_TEXT = 1 << 20;
/** A longer text is left to Apollo every time. */
const MAX_DOCUMENT_TEXT = 64 * 1024;

/** Apollo's persisted-query cache (keys as Apollo writes them) and its TTL. */
export interface PersistedQueries {
  cache: { get(key: string): Promise<string | undefined>; set(key: string, value: string, options?: { ttl?: number | null }): Promise<void> };
  ttl?: number | null;
}

export interface FastPathOptions {
  schema: GraphQLSchema;
  maxResponseBytes: number;
  /** costPlugin's check, the same instance (it remembers which documents are not variable-priced). */
  cost: VariableCostCheck;
  /** The request's one context: Apollo's context function returns the same promise for the same request. */
  contextFor(req: Request, res: Response): Promise<RequestContext>;
  /** Proves a remembered credential no statement proved (auth/authenticate.ts); true when it was refused or could not be proved. */
  credentialRefused(): Promise<boolean>;
}

/** For tests: answered here; executed here and answered by Apollo; a known document left to Apollo before it ran. */
export const graphqlFastPath = { served: 0, replayed: 0, declined: 0 };

/** What Apollo answers for a single result, by the Accept header (chooseContentTypeForSingleResultResponse). */
const MEDIA_TYPES = ["application/json; charset=utf-8", "application/graphql-response+json; charset=utf-8", "application/json; callbackSpec=1.0; charset=utf-8"];

interface GraphQLHttpRequest {
  query: string | undefined;
  operationName: string | undefined;
  variables: Record<string, unknown> | undefined;
  extensions: Record<string, unknown> | undefined;
}

export function fastPath(options: FastPathOptions) {
  const known = new Map<string, Map<string | undefined, Known>>();
  let textLength = 0;
  // With an Apollo key, Apollo's usage reporting would miss what runs here: everything stays Apollo's.
  let on = !process.env.APOLLO_KEY;
  /** Apollo's persisted-query cache, once started (undefined: APQ off, or not found). */
  let apq: PersistedQueries | undefined;
  const contentTypes = new Map<string, string | false>();

  /** Apollo's content type for this Accept (the same Negotiator, through Express's req.accepts), or false: Apollo's 406. */
  const contentType = (req: Request): string | false => {
    const accept = req.headers.accept;
    if (!accept) return MEDIA_TYPES[0];
    let type = contentTypes.get(accept);
    if (type === undefined) {
      type = req.accepts(MEDIA_TYPES);
      if (contentTypes.size < 100) contentTypes.set(accept, type);
    }
    return type;
  };

  const remember = (text: string, operationName: string | undefined, entry: Known) => {
    if (text.length > MAX_DOCUMENT_TEXT || holdsIntrospection(entry.document)) return;
    let byName = known.get(text);
    if (!byName) {
      for (const [oldest] of known) {
        if (known.size < MAX_DOCUMENTS && textLength + text.length <= MAX_TEXT) break;
        known.delete(oldest);
        textLength -= oldest.length;
      }
      known.set(text, (byName = new Map()));
      textLength += text.length;
    }
    byName.set(operationName, entry);
  };

  /** Fills the cache from Apollo's answers: a query that ran with data and no error, status 200. */
  const plugin: ApolloServerPlugin = {
    async requestDidStart() {
      return {
        async willSendResponse({ request, response, document, operation, source, queryHash }) {
          if (!document || operation?.operation !== "query" || typeof source !== "string" || typeof queryHash !== "string") return;
          const { body, http } = response;
          if (body.kind !== "single" || body.singleResult.errors !== undefined || body.singleResult.data == null) return;
          if (http.status !== undefined && http.status !== 200) return;
          if (known.get(source)?.has(request.operationName)) return;
          remember(source, request.operationName, { document, operation, hash: queryHash });
        },
      };
    },
  };

  const handler = async (req: Request, res: Response, next: NextFunction) => {
    if (!on) return next();
    const request = req.method === "POST" ? postRequest(req.body) : req.method === "GET" ? getRequest(req) : undefined;
    if (!request) return next();
    const { operationName, variables } = request;
    let text = request.query;
    // A persisted query (APQ): with its text, the hash must be the text's; without, Apollo must hold it.
    const persisted = request.extensions?.persistedQuery as { version?: unknown; sha256Hash?: unknown } | undefined;
    if (persisted) {
      if (!apq || typeof persisted !== "object" || persisted.version !== 1 || typeof persisted.sha256Hash !== "string") return next();
      if (text === undefined) text = await apq.cache.get(persisted.sha256Hash);
    }
    if (text === undefined) return next();
    const entry = known.get(text)?.get(operationName);
    if (!entry || (persisted && entry.hash !== persisted.sha256Hash)) return next();
    const type = contentType(req);
    if (!type) return declined(next);

    let context: RequestContext;
    try {
      context = await options.contextFor(req, res);
    } catch {
      return declined(next); // Apollo answers the same failure, from the same promise
    }
    const { document, operation } = entry;
    if (!passesInputGuard(document, variables) || options.cost(options.schema, document, operation, variables)) return declined(next);
    // Apollo registers a persisted query sent with its text once the plugins let it through.
    if (persisted && request.query !== undefined) {
      const ttl = apq!.ttl;
      Promise.resolve(apq!.cache.set(persisted.sha256Hash as string, text, ttl !== undefined ? { ttl } : undefined)).catch(() => undefined);
    }

    const running = executeDocument(options.schema, { document, operation, operationName: operation.name?.value ?? null, variables: variables ?? {}, context }, options.maxResponseBytes);
    const result: ExecutionResult | undefined = await running.then(
      (r) => r,
      () => undefined,
    );
    if (!result || result.errors !== undefined || result.data == null) {
      // Apollo formats errors, statuses and Retry-After: it answers with this result, executed once.
      graphqlFastPath.replayed++;
      answerWith(context, running);
      // Apollo, sent the hash alone, would look the text up again: it gets the text it stands for.
      if (persisted && request.query === undefined && req.method === "POST") (req.body as Record<string, unknown>).query = text;
      return next();
    }
    // A remembered credential this request's statements did not prove is proved now; refused, Apollo
    // runs the operation again, its first statement is refused too, and it answers the 401.
    if (await options.credentialRefused()) return declined(next);
    graphqlFastPath.served++;
    // As Apollo's Express integration writes its answer (runHttpQuery's field order, stringifyResult,
    // then res.send). A POST is never fresh (304) nor HEAD: res.send then sets exactly these two
    // headers, under these names, which is all it would do; a GET keeps res.send's freshness rules.
    const body = stringifyResult({ errors: undefined, data: result.data, extensions: result.extensions });
    res.statusCode = 200;
    if (req.method !== "POST") {
      res.setHeader("content-type", type);
      return void res.send(body);
    }
    res.setHeader("Content-Type", type);
    res.setHeader("Content-Length", Buffer.byteLength(body));
    res.end(body);
  };

  return {
    handler,
    plugin,
    /** Apollo's persisted-query cache, read and written as Apollo does. */
    persistedQueries(cache: PersistedQueries | undefined) {
      apq = cache;
    },
    /** Apollo is stopping: every request is its own again (it answers that it stopped). */
    off() {
      on = false;
    },
  };
}

function declined(next: NextFunction) {
  graphqlFastPath.declined++;
  next();
}

const isRecord = (o: unknown): o is Record<string, unknown> => !!o && typeof o === "object" && !Buffer.isBuffer(o) && !Array.isArray(o);

/**
 * A POST body Apollo takes as one operation without refusing it (runHttpQuery): an object with a
 * non-empty query text or none (a persisted query), variables and extensions objects or null, an
 * operation name or null. Anything else (a batch, a string for variables) is Apollo's to refuse.
 */
function postRequest(body: unknown): GraphQLHttpRequest | undefined {
  if (!isRecord(body)) return undefined;
  const { query, operationName, variables, extensions } = body;
  if (query !== undefined && (typeof query !== "string" || query === "")) return undefined;
  if (operationName != null && typeof operationName !== "string") return undefined;
  if (variables != null && !isRecord(variables)) return undefined;
  if (extensions != null && !isRecord(extensions)) return undefined;
  return { query, operationName: operationName ?? undefined, variables: variables ?? undefined, extensions: extensions ?? undefined };
}

/**
 * A GET Apollo runs: no Content-Type (Apollo refuses any but JSON with 415), a header that lets it
 * past CSRF prevention, each parameter at most once, variables as a JSON object, and no extensions
 * (persisted queries over GET are Apollo's).
 */
function getRequest(req: Request): GraphQLHttpRequest | undefined {
  if (req.headers["content-type"] !== undefined) return undefined;
  if (!req.get("apollo-require-preflight") && !req.get("x-apollo-operation-name")) return undefined;
  const at = req.url.indexOf("?");
  if (at < 0 || req.url.includes("#")) return undefined;
  const params = new URLSearchParams(req.url.slice(at));
  const one = (name: string) => {
    const values = params.getAll(name);
    return values.length <= 1 ? values[0] : null;
  };
  const query = one("query");
  const operationName = one("operationName");
  const variablesText = one("variables");
  if (!query || operationName === null || variablesText === null || params.has("extensions")) return undefined;
  let variables: unknown;
  if (variablesText !== undefined) {
    try {
      variables = JSON.parse(variablesText);
    } catch {
      return undefined;
    }
    if (!isRecord(variables)) return undefined;
  }
  return { query, operationName, variables: variables as Record<string, unknown> | undefined, extensions: undefined };
}

/** Introspection stays Apollo's. */
function holdsIntrospection(document: DocumentNode): boolean {
  let found = false;
  visit(document, {
    [Kind.FIELD](node) {
      if (node.name.value === "__schema" || node.name.value === "__type") {
        found = true;
        return BREAK;
      }
      return undefined;
    },
  });
  return found;
}
