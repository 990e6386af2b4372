// Which database errors are "try again later" (503), a statement timeout (504), or a fault of ours.
import { databaseFault } from "../../src/db/errors";

const pgError = (code: string, message = "x") => Object.assign(new Error(message), { code });
/** How @prisma/adapter-pg wraps a pg error inside Prisma's known request error. */
const viaPrisma = (cause: unknown) => Object.assign(new Error("prisma"), { code: "P2010", meta: { driverAdapterError: { cause } } });
/** How a resolver's error reaches the error formatter. */
const viaGraphql = (originalError: unknown) => Object.assign(new Error("graphql"), { originalError });

describe("databaseFault", () => {
  it("answers a read a hot standby cancelled for replay (40001) and a deadlock (40P01) as unavailable, however wrapped", () => {
    const conflict = pgError("40001", "canceling statement due to conflict with recovery");
    for (const err of [conflict, viaPrisma(conflict), viaGraphql(viaPrisma(conflict)), viaGraphql(pgError("40P01"))]) {
      expect(databaseFault(err)).toEqual({ kind: "unavailable", reason: expect.stringMatching(/^40(001|P01)$/) });
    }
  });

  it("keeps a statement timeout a timeout and a server going away unavailable", () => {
    expect(databaseFault(pgError("57014"))).toEqual({ kind: "timeout", reason: "57014" });
    expect(databaseFault(viaGraphql(pgError("57P01")))).toEqual({ kind: "unavailable", reason: "57P01" });
    expect(databaseFault(pgError("ECONNREFUSED"))).toEqual({ kind: "unavailable", reason: "ECONNREFUSED" });
  });

  it("leaves errors a retry would not clear to the caller (a constraint, bad input, a plain bug)", () => {
    for (const err of [pgError("23505"), pgError("22P02"), new TypeError("boom"), null, undefined, "text"]) {
      expect(databaseFault(err)).toBeUndefined();
    }
  });
});
