// Builds the /v1 Express router from the route table. A handler authenticates, parses parameters,
// runs the route's operation and sends the body: no business logic lives here.
import { Router, type NextFunction, type Request, type Response } from "express";
import type { GraphQLSchema } from "graphql";
import { createContext } from "../context";
import { missingScope } from "../errors";
import type { Services } from "../services";
import { runRoute, type PreparedOperations } from "../api/execute";
import { sendError, sendJson } from "../http/respond";
import { provedError, proveRememberedCredential } from "../auth/authenticate";
import { routes, type RouteSpec } from "../api/routes";

/**
 * The routes, one Express router per resource (the path's segment after /v1), found by that segment:
 * a request is matched against its resource's few routes, not the whole table in order, and a request
 * outside /v1 (MCP, the reference pages) crosses none of them.
 */
export function createRestRouter(services: Services, schema: GraphQLSchema, operations: PreparedOperations) {
  const byResource = new Map<string, Router>();
  for (const route of routes) {
    const resource = resourceOf(route.path);
    if (resource === undefined) throw new Error(`route ${route.method} ${route.path} is outside /v1`);
    if (!byResource.has(resource)) byResource.set(resource, resourceRouter(services, schema, operations, routes.filter((r) => resourceOf(r.path) === resource)));
  }
  const dispatch = (req: Request, res: Response, next: NextFunction) => {
    const resource = resourceOf(req.path);
    const router = resource === undefined ? undefined : byResource.get(resource);
    if (router) router(req, res, next);
    else next();
  };
  // Every route's layer, where a router keeps them: what reads Express's route table (the OpenAPI
  // contract test) sees these routes as it sees any router's.
  return Object.assign(dispatch, { stack: [...byResource.values()].flatMap((router) => router.stack) });
}

/** `guests` of `/v1/guests/:id/stays`; undefined outside /v1. Lower case: Express's routing ignores case. */
function resourceOf(path: string): string | undefined {
  path = path.toLowerCase();
  if (!path.startsWith("/v1/")) return undefined;
  const end = path.indexOf("/", 4);
  return path.slice(4, end === -1 ? undefined : end);
}

function resourceRouter(services: Services, schema: GraphQLSchema, operations: PreparedOperations, routes: RouteSpec[]): Router {
  const router = Router();
  for (const route of routes) {
    if (!operations.has(route.operation)) throw new Error(`route ${route.method} ${route.path} names unknown operation ${route.operation}`);
    const handle = async (req: Request, res: Response) => {
      try {
        const context = await createContext(services, {
          authorization: req.get("authorization"),
          propertyHeader: req.get("x-property-id"),
          surface: "rest",
          address: req.ip,
          requiredScope: route.scope,
          response: res,
          provesBeforeAnswering: true,
        });
        res.locals.credential = context.credential;
        // The scope before the input: a caller without it learns nothing about what the route accepts.
        if (!context.credential.scopes.has(route.scope)) throw missingScope(route.scope);
        const body = await runRoute(schema, operations, route, context, { path: req.params as Record<string, string>, query: req.query, body: req.body });
        await proveRememberedCredential(services.db.readerPool);
        setDeprecationHeaders(res, route, req.query);
        if (route.status === 204) {
          res.status(204).end();
          return;
        }
        if (route.status) res.status(route.status);
        sendJson(res, body);
      } catch (err) {
        sendError(req, res, await provedError(err, services.db.readerPool));
      }
    };
    if (route.method === "GET") router.get(route.path, handle);
    else if (route.method === "DELETE") router.delete(route.path, handle);
    else router.post(route.path, handle);
  }
  for (const [path, methods] of methodsByPath(routes)) {
    router.all(path, (req, res) => {
      res.set("Allow", methods.join(", "));
      res.status(405).json({ error: "method_not_allowed", detail: `${req.method} is not allowed here; use ${methods.join(" or ")}` });
    });
  }
  return router;
}

function methodsByPath(table: RouteSpec[]): Map<string, string[]> {
  const map = new Map<string, string[]>();
  for (const r of table) map.set(r.path, [...(map.get(r.path) ?? []), r.method]);
  return map;
}

/**
 * A request that uses a deprecated query value (mode=rollup) is told so in the answer, where client
 * libraries and gateways look: `Deprecation: @<unix seconds>` (RFC 9745), `Sunset: <HTTP-date>` (RFC 8594).
 */
function setDeprecationHeaders(res: Response, route: RouteSpec, query: Record<string, unknown>) {
  const used = route.deprecatedValues?.find((d) => query[d.parameter] === d.value);
  if (!used) return;
  res.set("Deprecation", `@${Math.floor(used.deprecatedAt.getTime() / 1000)}`);
  res.set("Sunset", used.sunsetAt.toUTCString());
}
