// The webhook bench's receiver, in a process of its own (as a receiver is): it answers 204 to every
// POST and keeps, per path, when each webhook-id first arrived. bench/webhooks.ts asks over IPC.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

const arrivals = new Map<string, Map<string, number>>();
let duplicates = 0;

const server = createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    const id = String(req.headers["webhook-id"]);
    let seen = arrivals.get(req.url!);
    if (!seen) arrivals.set(req.url!, (seen = new Map()));
    if (seen.has(id)) duplicates++;
    else seen.set(id, Date.now());
    res.writeHead(204).end();
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1", () => process.send!({ port: (server.address() as AddressInfo).port }));

process.on("message", (m: { ask: "counts" | "arrivals" }) => {
  if (m.ask === "counts") process.send!({ counts: Object.fromEntries([...arrivals].map(([path, ids]) => [path, ids.size])) });
  else process.send!({ arrivals: Object.fromEntries([...arrivals].map(([path, ids]) => [path, [...ids]])), duplicates });
});
process.on("disconnect", () => process.exit(0));
