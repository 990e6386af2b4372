// One HTTP gate per service instance in front of the stand-in destination (src/delivery/standin.ts).
// Each gate forwards its instance's requests and notes which member operations they made the
// destination apply, so a test knows who delivered what. A gate can also hold its answers: the
// destination has applied the request, but the instance does not hear back, so its batch stays in
// flight (its transaction open, its binding locked) until the test releases or kills it.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { ReceivedOperation, StandIn } from "../../src/delivery/standin";

export interface Gate {
  url: string;
  /** Operations the destination applied for this gate's requests, in the order it applied them. */
  operations: ReceivedOperation[];
  /** Operations applied since the last hold() whose answers were held (the instance never heard back). */
  heldOperations: ReceivedOperation[];
  /** From now on answers are kept from the instance until release(). */
  hold(): void;
  /** Resolves once an answer is held: a batch of the instance is in flight and the destination applied it. */
  held(): Promise<void>;
  /** Sends the held answers (to nobody, when the instance is gone) and stops holding. */
  release(): void;
  close(): Promise<void>;
}

interface Answer {
  status: number;
  contentType: string | null;
  body: Buffer;
}

const FORWARDED_HEADERS = ["authorization", "revision", "content-type", "accept"];

/** `count` gates in front of `standIn`. */
export async function startGates(standIn: StandIn, count: number): Promise<Gate[]> {
  // One request at a time reaches the stand-in, so the operations it records between a request's
  // start and its answer are that request's, whichever gate it came through.
  let queue: Promise<unknown> = Promise.resolve();
  const exclusive = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = queue.then(fn);
    queue = run.catch(() => undefined);
    return run;
  };

  const forward = (req: IncomingMessage, body: Buffer) =>
    exclusive(async () => {
      const before = standIn.received().length;
      const headers = Object.fromEntries(FORWARDED_HEADERS.flatMap((h) => (req.headers[h] ? [[h, String(req.headers[h])]] : [])));
      const res = await fetch(`${standIn.url}${req.url}`, { method: req.method, headers, body: body.length > 0 ? body : undefined });
      const answer: Answer = { status: res.status, contentType: res.headers.get("content-type"), body: Buffer.from(await res.arrayBuffer()) };
      return { answer, operations: standIn.received().slice(before) };
    });

  return Promise.all(Array.from({ length: count }, () => startGate(forward)));
}

async function startGate(forward: (req: IncomingMessage, body: Buffer) => Promise<{ answer: Answer; operations: ReceivedOperation[] }>): Promise<Gate> {
  let holding = false;
  let heldAnswers: (() => void)[] = [];
  let onHeld: (() => void) | undefined;
  const operations: ReceivedOperation[] = [];
  const heldOperations: ReceivedOperation[] = [];

  const server = createServer((req, res) => {
    res.on("error", () => undefined); // the instance may be gone (killed) before its answer is sent
    readBody(req)
      .then((body) => forward(req, body))
      .then(({ answer, operations: applied }) => {
        operations.push(...applied);
        const send = () => reply(res, answer);
        if (!holding) return send();
        heldOperations.push(...applied);
        heldAnswers.push(send);
        onHeld?.();
        onHeld = undefined;
      })
      .catch(() => reply(res, { status: 502, contentType: null, body: Buffer.alloc(0) }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));

  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    operations,
    heldOperations,
    hold() {
      holding = true;
      heldOperations.length = 0;
    },
    held: () => (heldAnswers.length > 0 ? Promise.resolve() : new Promise<void>((resolve) => (onHeld = resolve))),
    release() {
      holding = false;
      const answers = heldAnswers;
      heldAnswers = [];
      for (const send of answers) send();
    },
    close() {
      server.closeAllConnections();
      return new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
    },
  };
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

function reply(res: ServerResponse, answer: Answer) {
  if (res.destroyed) return;
  res.writeHead(answer.status, answer.contentType ? { "content-type": answer.contentType } : {}).end(answer.body);
}
