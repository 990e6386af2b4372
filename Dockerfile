# syntax=docker/dockerfile:1
# The service image: `docker build -t guest-context .`; compose.yaml runs it with PostgreSQL 15.
# test/unit/container-files.test.ts lints this file; `npm run smoke:production` replays both stages
# outside Docker and runs the result against a real PostgreSQL 15.

# Base images pinned to a release: Node 24.21.0, the version of the `node` dev dependency that runs
# development and the tests (test/unit/node-version.test.ts holds the two together). This image is the
# one supported way production gets its Node: `gcs` refuses an older one (src/cli/node-version.ts).

# Build: the full install (TypeScript, the Prisma CLI, redoc) and `npm run build` → dist/, which
# carries the generated Prisma client and Redoc's bundle.
FROM node:24.21.0-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# The postinstall script applies patches/ and generates the Prisma client.
COPY scripts/postinstall.js scripts/patches.js ./scripts/
COPY patches ./patches
COPY prisma.config.ts ./
COPY prisma ./prisma
RUN --mount=type=cache,target=/root/.npm npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts/build.js ./scripts/
COPY src ./src
RUN npm run build

# Runtime: production dependencies only (the postinstall script patches graphql-jit), the compiled
# service, the files it reads at run time, and no secrets: configuration comes from the environment.
FROM node:24.21.0-bookworm-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
COPY scripts/postinstall.js scripts/patches.js ./scripts/
COPY patches ./patches
# --omit=optional too: nothing optional is needed at run time (npm ci --omit=dev alone installs the
# same set today; `npm run size:production` measures both).
RUN --mount=type=cache,target=/root/.npm npm ci --omit=dev --omit=optional --no-audit --no-fund
COPY schema.graphql ./
COPY dashboard ./dashboard
COPY prisma/migrations ./prisma/migrations
COPY bin ./bin
COPY --from=build /app/dist ./dist
USER node
# The embedded PGlite (no DATABASE_URL) needs a directory the node user may write.
ENV PORT=3000 GCS_DATA_DIR=/home/node/pglite
EXPOSE 3000
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + process.env.PORT + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# The same command as `npm run start:production`.
CMD ["node", "--max-semi-space-size=32", "--heap-growing-percent=50", "dist/cli/main.js", "serve"]
