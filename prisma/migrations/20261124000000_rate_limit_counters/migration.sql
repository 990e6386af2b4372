-- Rate limit hits per key and clock-aligned window, summed over all instances (src/http/rate-limit.ts).
-- Written by one upsert per instance per sync interval, never on the request path. UNLOGGED: the
-- counts live for one window, so losing them in a crash costs nothing and saves WAL on every sync.

-- CreateTable
CREATE UNLOGGED TABLE "rate_limit_counters" (
    "key" TEXT NOT NULL,
    "window_start" TIMESTAMPTZ(3) NOT NULL,
    "hits" INTEGER NOT NULL,

    CONSTRAINT "rate_limit_counters_pkey" PRIMARY KEY ("key","window_start")
);
