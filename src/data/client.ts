// The Prisma client's type under a data-layer name: code above data/ (auth, OAuth, delivery, the
// CLI) holds a client only to pass it to data functions, and so never imports Prisma itself. And the
// readiness probe's statement.
import type { PrismaClient } from "../generated/prisma/client";

export type DataClient = PrismaClient;

/** Resolves when the database answers a statement (readiness); rejects with its error otherwise. */
export async function databaseAnswers(prisma: PrismaClient): Promise<void> {
  await prisma.$queryRaw`SELECT 1`;
}
