// Opens the service's database: PostgreSQL at DATABASE_URL, or the embedded PGlite default. Applies
// pending migrations, and returns Prisma clients for writes (primary) and reads (replica if set).
import { PrismaPg } from "@prisma/adapter-pg";
import { countQueries } from "./sql-count";
import { PrismaClient } from "../generated/prisma/client";
import { startEmbeddedPostgres } from "./embedded";
import { migrate } from "./migrate";

export type Prisma = PrismaClient;

export interface Database {
  /** Writes and anything that must read its own writes. */
  primary: PrismaClient;
  /** Reads: the replica when one is configured, else the primary. */
  reader: PrismaClient;
  embedded: boolean;
  url: string;
  close(): Promise<void>;
}

export interface DatabaseOptions {
  databaseUrl?: string;
  replicaUrl?: string;
  dataDir: string;
  poolSize: number;
  migrate?: boolean;
}

export async function openDatabase(opts: DatabaseOptions): Promise<Database> {
  const embedded = opts.databaseUrl ? undefined : await startEmbeddedPostgres(opts.dataDir);
  const url = opts.databaseUrl ?? embedded!.url;
  try {
    if (opts.migrate !== false) await migrate(url);
  } catch (err) {
    await embedded?.stop();
    throw err;
  }
  const poolSize = embedded ? 1 : opts.poolSize;
  const primary = createPrismaClient(url, poolSize);
  const reader = opts.replicaUrl ? createPrismaClient(opts.replicaUrl, poolSize) : primary;
  return {
    primary,
    reader,
    embedded: Boolean(embedded),
    url,
    async close() {
      await primary.$disconnect();
      if (reader !== primary) await reader.$disconnect();
      await embedded?.stop();
    },
  };
}

export function createPrismaClient(connectionString: string, max: number): PrismaClient {
  return countQueries(new PrismaClient({ adapter: new PrismaPg({ connectionString, max }) }));
}

/** A connection string with its password removed, for log lines. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "redacted";
    return u.toString();
  } catch {
    return "(unparseable url)";
  }
}
