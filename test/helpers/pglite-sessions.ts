// Run as a child process (PGlite's WebAssembly loads through dynamic import, which Jest's module
// sandbox does not allow): `gcs serve`'s embedded database, served to several clients at once as the
// running server serves it to the other gcs commands. Two clients interleave parameterised queries
// (Parse/Bind/Execute/Sync), transactions and errors; a third dies inside a transaction; a slow one
// pauses in the middle of its exchange (Parse and Bind sent, Execute and Sync 300 ms later) while
// another client queries. Prints one line of JSON: what each client saw that it should not have.
import net from "node:net";
import { Client } from "pg";
import { PREPARE_EMBEDDED_COMMAND } from "../../src/cli/program";
import { migrate } from "../../src/db/migrate";
import { serveEmbeddedToLocalTools, startEmbeddedPostgres } from "../../src/embedded/server";

const ROUNDS = 150;

async function main(dataDir: string) {
  serveEmbeddedToLocalTools(PREPARE_EMBEDDED_COMMAND);
  const db = await startEmbeddedPostgres(dataDir, migrate);
  const problems: string[] = [];
  const committed: Record<string, number> = { a: 0, b: 0 };
  try {
    const setup = new Client({ connectionString: db.url });
    await setup.connect();
    await setup.query("CREATE TABLE rows (tag text NOT NULL, n int NOT NULL)");

    const client = async (tag: string) => {
      const c = new Client({ connectionString: db.url });
      await c.connect();
      for (let i = 0; i < ROUNDS; i++) {
        try {
          if (i % 5 === 0) {
            // A transaction: its own inserts are visible to it, the other client's never interleave.
            await c.query("BEGIN");
            await c.query("INSERT INTO rows (tag, n) VALUES ($1, $2)", [tag, i]);
            const seen = await c.query("SELECT count(*)::int AS n FROM rows WHERE tag = $1", [tag]);
            if (seen.rows[0].n !== committed[tag] + 1) problems.push(`${tag}${i}: saw ${seen.rows[0].n} rows in its transaction, expected ${committed[tag] + 1}`);
            const rollback = i % 10 === 0;
            await c.query(rollback ? "ROLLBACK" : "COMMIT");
            if (!rollback) committed[tag]++;
          } else if (i % 7 === 0) {
            // An error inside an extended-protocol exchange: the session skips to this client's Sync.
            const failed = await c.query("SELECT $1::int AS n", [`not a number ${tag}`]).then(() => false, () => true);
            if (!failed) problems.push(`${tag}${i}: a bad integer was accepted`);
          } else {
            const r = await c.query("SELECT $1::text AS tag, $2::int AS n, pg_sleep(0) AS pause", [tag, i]);
            if (r.rows[0].tag !== tag || r.rows[0].n !== i) problems.push(`${tag}${i}: got ${JSON.stringify(r.rows[0])}`);
          }
        } catch (err) {
          problems.push(`${tag}${i}: ${(err as Error).message}`);
        }
      }
      await c.end();
    };

    // A client that goes away inside a transaction: its insert is rolled back, the session freed.
    const dying = new Client({ connectionString: db.url });
    dying.on("error", () => undefined); // its own connection, cut below
    await dying.connect();
    await dying.query("BEGIN");
    await dying.query("INSERT INTO rows (tag, n) VALUES ('dying', 1)");
    (dying as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();

    await Promise.all([client("a"), client("b")]);

    // The slow client's unnamed statement and portal are its own until its Sync.
    const slow = await rawConnect(db.url);
    slow.send(message("P", cstr(""), cstr("SELECT $1::text AS v"), int16(0)), message("B", cstr(""), cstr(""), int16(0), int16(1), int32(4), Buffer.from("slow"), int16(0)));
    const other = new Client({ connectionString: db.url });
    // Not awaited: its connection too waits for the slow client's Sync.
    const otherAnswer = other.connect().then(() => other.query("SELECT $1::text AS v", ["other"]));
    await new Promise((r) => setTimeout(r, 300));
    slow.send(message("E", cstr(""), int32(0)), message("S"));
    const rows = await slow.untilReady();
    if (JSON.stringify(rows) !== JSON.stringify(["slow"])) problems.push(`slow client: got ${JSON.stringify(rows)}, expected ["slow"]`);
    const answer = await otherAnswer.then((r) => r.rows[0].v, (err: Error) => err.message);
    if (answer !== "other") problems.push(`the other client during the slow one: got ${answer}`);
    slow.end();
    await other.end();
    const counts = await setup.query("SELECT tag, count(*)::int AS n FROM rows GROUP BY tag ORDER BY tag");
    await setup.end();
    console.log(JSON.stringify({ problems, committed, counts: Object.fromEntries(counts.rows.map((r) => [r.tag, r.n])) }));
  } finally {
    await db.stop();
  }
}

/** A PostgreSQL wire-protocol client that sends exactly the messages it is given, when it is told. */
async function rawConnect(url: string) {
  const { hostname, port } = new URL(url);
  const socket = net.connect(Number(port), hostname);
  let buffered = Buffer.alloc(0);
  let waiting: (() => void) | undefined;
  socket.on("data", (d) => {
    buffered = Buffer.concat([buffered, d]);
    waiting?.();
  });
  /** Reads messages until ReadyForQuery: the text of each DataRow's first column, or "error: …". */
  const untilReady = () =>
    new Promise<string[]>((resolve) => {
      const out: string[] = [];
      const read = () => {
        while (buffered.length >= 5 && buffered.length >= 1 + buffered.readInt32BE(1)) {
          const type = String.fromCharCode(buffered[0]);
          const body = buffered.subarray(5, 1 + buffered.readInt32BE(1));
          buffered = buffered.subarray(1 + buffered.readInt32BE(1));
          if (type === "D") out.push(body.subarray(6, 6 + body.readInt32BE(2)).toString());
          if (type === "E") out.push(`error: ${body.toString().replace(/\0/g, " ").trim()}`);
          if (type === "Z") return resolve(out);
        }
        waiting = read;
      };
      read();
    });
  await new Promise((r) => socket.once("connect", r));
  const startup = Buffer.concat([int32(196608), cstr("user"), cstr("postgres"), cstr("database"), cstr("postgres"), Buffer.from([0])]);
  socket.write(Buffer.concat([int32(startup.length + 4), startup]));
  await untilReady();
  return { send: (...messages: Buffer[]) => socket.write(Buffer.concat(messages)), untilReady, end: () => socket.end(message("X")) };
}

function message(type: string, ...parts: Buffer[]): Buffer {
  const body = Buffer.concat(parts);
  return Buffer.concat([Buffer.from(type), int32(body.length + 4), body]);
}
const cstr = (s: string) => Buffer.from(`${s}\0`);
const int16 = (n: number) => Buffer.from([(n >> 8) & 0xff, n & 0xff]);
function int32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
}

// The data directory: the last argument (run with `node -e`, which has no script path in argv).
main(process.argv[process.argv.length - 1]).then(
  () => process.exit(0),
  (err: Error) => {
    console.log(JSON.stringify({ problems: [`failed: ${err.message}`] }));
    process.exit(1);
  },
);
