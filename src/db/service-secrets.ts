// Secrets the service makes for itself when configuration gives none (cursor signing, session JWT
// key of the embedded demo). Kept in the database so that every instance and every CLI run shares
// them; the first writer wins, the rest read its value. Only gcs_system may read or write the table
// (docs/security.md): whoever asks, this is the one place that does, on its own cross-group path.
import { randomBytes } from "node:crypto";
import type { PrismaClient } from "../generated/prisma/client";
import { acrossGroups } from "./session";

export function serviceSecret(prisma: PrismaClient, name: string): Promise<string> {
  return acrossGroups("service start", async () => {
    await prisma.$executeRaw`INSERT INTO service_secrets (name, value)
      VALUES (${name}, ${randomBytes(32).toString("base64url")}) ON CONFLICT (name) DO NOTHING`;
    const row = await prisma.serviceSecret.findUniqueOrThrow({ where: { name } });
    return row.value;
  });
}
