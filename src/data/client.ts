// The Prisma client's type under a data-layer name: code above data/ (auth, OAuth, delivery, the
// CLI) holds a client only to pass it to data functions, and so never imports Prisma itself.
import type { PrismaClient } from "../generated/prisma/client";

export type DataClient = PrismaClient;
