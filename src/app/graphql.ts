// mountGraphql: GraphQL subscriptions over Server-Sent Events (graphql/stream.ts) and Apollo 5 on
// /graphql, executed by graphql-jit (graphql/compiled.ts), with the same context factory as every door;
// documents Apollo has already run without an error skip its per-request pipeline (app/graphql-fast.ts).
// Below it, how Apollo's errors are given our codes, masked and bounded.
import type express from "express";
import { ApolloServer, HeaderMap, type ApolloServerPlugin, type GraphQLResponse } from "@apollo/server";
import { expressMiddleware } from "@as-integrations/express5";
import { ApolloServerPluginCacheControlDisabled } from "@apollo/server/plugin/disabled";
import { ApolloServerPluginLandingPageDisabled } from "@apollo/server/plugin/disabled";
import { unwrapResolverError } from "@apollo/server/errors";
import { GraphQLError, type GraphQLFormattedError, type GraphQLSchema } from "graphql";
import { createContext, type RequestContext } from "../context";
import { currentRecord } from "../observability/request";
import { proveRememberedCredential } from "../auth/authenticate";
import { boundMessage, errorCodeOf, withHttpStatus } from "../errors";
import { compiledExecutorGateway } from "../graphql/compiled";
import { stringifyResult } from "../graphql/raw-json";
import { GRAPHQL_STREAM_PATH, graphqlStream } from "../graphql/stream";
import { costPlugin, holdsSubscription, subscriptionsElsewhere, validationRules, variableCostCheck } from "../graphql/limits";
import { inputGuardPlugin } from "../graphql/input-guard";
import { loadTrustedDocuments, trustedDocumentsPlugin } from "../graphql/trusted-documents";
import { RETRY_AFTER_SECONDS, type DatabaseFaults } from "../db/faults";
import type { Logger } from "../logger";
import type { Services } from "../services";
import type { LiveStreams } from "../streams/event-stream";
import { jsonBody } from "./body";
import { fastPath, type PersistedQueries } from "./graphql-fast";

export async function mountGraphql(app: express.Express, services: Services, schema: GraphQLSchema, faults: DatabaseFaults, live: LiveStreams) {
  // GraphQL subscriptions over Server-Sent Events (graphql/stream.ts), before Apollo's /graphql mount would take the path.
  const graphqlSse = graphqlStream(services, schema, live);
  app.use(GRAPHQL_STREAM_PATH, jsonBody("1mb"), graphqlSse.handler);

  // Read at start-up, so a missing or malformed allow-list stops the service instead of a request.
  const trusted = services.config.graphqlTrustedDocuments ? [trustedDocumentsPlugin(loadTrustedDocuments(services.config.graphqlTrustedDocuments))] : [];
  // One check for Apollo's plugin and the fast path: it remembers which documents no variable prices.
  const cost = variableCostCheck(services.config.graphqlMaxCost);
  // The request's context, made once: the fast path (app/graphql-fast.ts) may make it and then leave
  // the request to Apollo, whose context function gets the same promise (a credential slot is held once).
  const contexts = new WeakMap<express.Request, Promise<RequestContext>>();
  const contextFor = (req: express.Request, res: express.Response): Promise<RequestContext> => {
    let context = contexts.get(req);
    if (!context) {
      context = createContext(services, {
        authorization: req.get("authorization"),
        propertyHeader: req.get("x-property-id"),
        surface: "graphql",
        address: req.ip,
        response: res,
        provesBeforeAnswering: true,
      }).then(
        (made) => ((res.locals.credential = made.credential), made),
        (err) => {
          throw withFaultStatus(withHttpStatus(faults.errorFor(err, "/graphql") ?? err));
        },
      );
      contexts.set(req, context);
    }
    return context;
  };
  const maxResponseBytes = services.config.graphqlMaxResponseBytes;
  const fast = fastPath({ schema, maxResponseBytes, cost, contextFor, credentialRefused: () => proveRememberedCredential(services.db.readerPool).then(() => false, () => true) });
  const apollo = new ApolloServer({
    // The schema, executed by graphql-jit; results over the response cap answer response_too_large.
    gateway: compiledExecutorGateway(schema, maxResponseBytes),

    introspection: services.config.graphqlIntrospection,
    // The parser stops after this many tokens, so a huge document costs little to refuse.
    parseOptions: { maxTokens: services.config.graphqlMaxTokens },
    validationRules: validationRules(services.config),
    includeStacktraceInErrorResponses: false,
    // Writes a result the JSON read path (graphql/json-plan.ts) wrote already as it is.
    stringifyResult,
    // Apollo's own handler stops the server and re-raises the signal, killing the process mid-drain;
    // server.ts drains instead.
    stopOnTerminationSignals: false,
    plugins: [
      ApolloServerPluginCacheControlDisabled(),
      ApolloServerPluginLandingPageDisabled(),
      inputGuardPlugin(),
      ...trusted,
      costPlugin(cost),
      credentialProof(services, faults),
      faultStatus,
      boundErrors,
      fast.plugin,
    ],
    // With introspection off (production) errors do not suggest the schema's names either.
    formatError: (formatted, error) =>
      boundFormatted(maskUnexpected(ownValidationCode(formatted, error), error, services.logger, faults), !services.config.graphqlIntrospection),
  });
  await apollo.start();
  // Apollo's persisted-query cache, which the fast path reads and writes as Apollo does (not part of
  // its API: when it cannot be found, persisted queries are all Apollo's).
  fast.persistedQueries((apollo as unknown as { internals?: { persistedQueries?: PersistedQueries } }).internals?.persistedQueries);
  app.use(
    "/graphql",
    jsonBody("1mb"),
    // Documents Apollo has already run without an error skip its per-request pipeline.
    fast.handler,
    (req, res, next) => {
      // graphql/limits.ts holdsSubscription: refused here, as the validation rule would, before Apollo's 500.
      const query = req.method === "GET" ? req.query.query : (req.body as { query?: unknown } | undefined)?.query;
      if (!holdsSubscription(query, services.config.graphqlMaxTokens)) return next();
      const { message, extensions } = subscriptionsElsewhere();
      res.status(400).json({ errors: [{ message, extensions }] });
    },
    expressMiddleware(apollo, { context: ({ req, res }) => contextFor(req, res) }),
  );
  return {
    closeStreams: () => graphqlSse.close(),
    stop: () => {
      fast.off();
      return apollo.stop();
    },
  };
}

/**
 * Apollo files every validation error under GRAPHQL_VALIDATION_FAILED; our own rules' refusals
 * (query_too_complex, unsupported_operation) keep the code they were raised with.
 */
function ownValidationCode(formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError {
  const original = error instanceof GraphQLError ? error.originalError : undefined;
  const code = original instanceof GraphQLError ? errorCodeOf(original) : undefined;
  return code ? { ...formatted, extensions: { ...formatted.extensions, code } } : formatted;
}

/**
 * GraphQL errors of ours and Apollo's keep their code; a database fault becomes `unavailable` or
 * `query_timeout` (logged once per outage); anything else becomes internal_error.
 */
function maskUnexpected(formatted: GraphQLFormattedError, error: unknown, logger: Logger, faults: DatabaseFaults): GraphQLFormattedError {
  const cause = unwrapResolverError(error);
  if (cause instanceof GraphQLError && (errorCodeOf(cause) || formatted.extensions?.code !== "INTERNAL_SERVER_ERROR")) {
    return formatted;
  }
  // Apollo refuses some requests with an HTTP 4xx and no code (a persisted query whose sha256 does not
  // match its text): the client's mistake, answered as Apollo's other refusals are, and not logged.
  if (cause instanceof GraphQLError && clientStatus(cause)) return { ...formatted, extensions: { ...formatted.extensions, code: "BAD_REQUEST" } };
  const fault = faults.errorFor(cause, "/graphql");
  if (fault) return { message: fault.message, path: formatted.path, extensions: fault.extensions };
  // Apollo wraps what the context function threw ("Context creation failed: …") without its stack.
  const err = cause instanceof GraphQLError && cause.originalError ? cause.originalError : cause;
  logger.error({ err, requestId: currentRecord()?.requestId }, "unhandled GraphQL error");
  return { message: "unexpected server fault; retry later", path: formatted.path, extensions: { code: "internal_error" } };
}

const clientStatus = (err: GraphQLError) => {
  const status = (err.extensions.http as { status?: number } | undefined)?.status;
  return status !== undefined && status >= 400 && status < 500;
};

/** A formatted error's message bounded (errors.ts boundMessage), suggestions hidden when asked. */
function boundFormatted(formatted: GraphQLFormattedError, hideSuggestions: boolean): GraphQLFormattedError {
  const message = boundMessage(formatted.message, { hideSuggestions });
  return message === formatted.message ? formatted : { ...formatted, message };
}

/** At most this many errors in one response (the first ones): each row of a page can fail, and each error costs bytes. */
const MAX_ERRORS = 100;

const boundErrors: ApolloServerPlugin = {
  async requestDidStart() {
    return {
      async willSendResponse({ response }) {
        if (response.body.kind !== "single") return;
        const errors = response.body.singleResult.errors;
        if (errors && errors.length > MAX_ERRORS) response.body.singleResult.errors = errors.slice(0, MAX_ERRORS);
      },
    };
  },
};

/**
 * A remembered credential no statement of the request proved (an introspection, a validation error)
 * is proved before the answer goes (auth/authenticate.ts); refused, the answer is the 401 a lookup
 * would have given (faultStatus sets the status).
 */
function credentialProof(services: Services, faults: DatabaseFaults): ApolloServerPlugin {
  return {
    async requestDidStart() {
      return {
        async willSendResponse({ response }) {
          if (response.body.kind !== "single") return;
          // An outage's answer (503/504) or a refusal already: nothing to prove, nothing given away.
          const code = response.body.singleResult.errors?.[0]?.extensions?.code;
          if (code === "unavailable" || code === "query_timeout" || code === "unauthorized") return;
          try {
            await proveRememberedCredential(services.db.readerPool);
          } catch (err) {
            // The refusal (401), or the database failing the proof (503/504).
            const answer = err instanceof GraphQLError ? err : faults.errorFor(err, "/graphql");
            if (!answer) throw err;
            response.body.singleResult = { errors: [{ message: answer.message, extensions: { code: answer.extensions.code } }] };
            // Apollo runs the plugins' willSendResponse side by side: faultStatus has seen the old answer.
            setFaultStatus(response);
          }
        },
      };
    },
  };
}

/**
 * When nothing ran (no data) because the database was down or too slow, /graphql answers with the
 * same status as REST: 503 with Retry-After, or 504; 401 when the credential was refused. Partial results keep 200.
 */
const faultStatus: ApolloServerPlugin = {
  async requestDidStart() {
    return {
      async willSendResponse({ response }) {
        setFaultStatus(response);
      },
    };
  },
};

function setFaultStatus(response: GraphQLResponse) {
  if (response.body.kind !== "single" || response.body.singleResult.data != null) return;
  const code = response.body.singleResult.errors?.[0]?.extensions?.code;
  if (code === "unavailable") {
    response.http.status = 503;
    response.http.headers.set("retry-after", String(RETRY_AFTER_SECONDS));
  } else if (code === "query_timeout") {
    response.http.status = 504;
  } else if (code === "unauthorized") {
    // A remembered credential refused (auth/remembered-credentials.ts): as a refused lookup.
    response.http.status = 401;
  }
}

/** A 503 thrown before execution (while authenticating) carries Retry-After too. */
function withFaultStatus(err: unknown): unknown {
  const http = err instanceof GraphQLError ? (err.extensions.http as { status?: number; headers?: HeaderMap } | undefined) : undefined;
  if (http?.status === 503) http.headers = new HeaderMap([["retry-after", String(RETRY_AFTER_SECONDS)]]);
  return err;
}
