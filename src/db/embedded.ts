// The embedded default: PostgreSQL compiled to WebAssembly (PGlite), in-process, with its data on
// disk, served on a loopback port so that Prisma and pg use exactly the code paths they use against
// a real server.
import { mkdirSync } from "node:fs";
import net from "node:net";
import path from "node:path";

export interface EmbeddedPostgres {
  url: string;
  stop(): Promise<void>;
}

export async function startEmbeddedPostgres(dataDir: string): Promise<EmbeddedPostgres> {
  const { PGlite } = await import("@electric-sql/pglite");
  const { PGLiteSocketServer } = await import("@electric-sql/pglite-socket");
  const dir = path.resolve(dataDir);
  mkdirSync(dir, { recursive: true });
  const db = await PGlite.create(dir);
  const port = await freePort();
  // PGlite is one session: a single connection keeps transactions from interleaving.
  const server = new PGLiteSocketServer({ db, port, host: "127.0.0.1", maxConnections: 1 });
  await server.start();
  return {
    url: `postgresql://postgres@127.0.0.1:${port}/postgres?sslmode=disable`,
    async stop() {
      await server.stop();
      await db.close();
    },
  };
}

/** A port the OS has just handed out on loopback (free at that moment). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}
