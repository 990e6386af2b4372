// Prisma CLI configuration. The JavaScript schema engine (WebAssembly) keeps `prisma generate` and
// `prisma migrate diff` offline; the service applies migrations itself (src/db/migrate.ts).
import { defineConfig } from "prisma/config";
import { PrismaPg } from "@prisma/adapter-pg";

export default defineConfig({
  schema: "prisma/schema.prisma",
  experimental: { adapter: true },
  engine: "js",
  adapter: async () =>
    new PrismaPg({ connectionString: process.env.DATABASE_URL ?? "postgresql://localhost:5432/unused" }),
});
