// Secrets the service makes for itself when configuration gives none (cursor signing, session JWT
// key of the embedded demo). Kept in the database so that every instance and every CLI run shares
// them; the first writer wins, the rest read its value.
import { randomBytes } from "node:crypto";
import type { PrismaClient } from "../generated/prisma/client";

export async function serviceSecret(prisma: PrismaClient, name: string): Promise<string> {
  await prisma.$executeRaw`INSERT INTO service_secrets (name, value)
    VALUES (${name}, ${randomBytes(32).toString("base64url")}) ON CONFLICT (name) DO NOTHING`;
  const row = await prisma.serviceSecret.findUniqueOrThrow({ where: { name } });
  return row.value;
}
