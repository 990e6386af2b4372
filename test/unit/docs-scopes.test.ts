// docs/using-the-api.md's scope list against the vocabulary (src/auth/scopes.ts): every scope named,
// and each session role described by what ROLE_SCOPES gives it.
import { readFileSync } from "node:fs";
import path from "node:path";
import { ALL_SCOPES, READ_SCOPES, ROLE_SCOPES, WRITE_SCOPES } from "../../src/auth/scopes";

const doc = readFileSync(path.join(__dirname, "../../docs/using-the-api.md"), "utf8");
const scopesBullet = /^- Scopes: [\s\S]*?(?=\n- )/m.exec(doc)![0];

it("names every scope of the vocabulary", () => {
  const named = new Set([...scopesBullet.matchAll(/`((?:read|write):[a-z_]+)`/g)].map((m) => m[1]));
  expect([...named].sort()).toEqual([...ALL_SCOPES].sort());
});

it("describes each session role's scopes as ROLE_SCOPES has them", () => {
  const everyRead = ALL_SCOPES.filter((s) => s.startsWith("read:"));
  expect(ROLE_SCOPES.owner).toEqual(ALL_SCOPES);
  expect(ROLE_SCOPES.admin).toEqual(ALL_SCOPES);
  expect([...ROLE_SCOPES.member].sort()).toEqual([...everyRead.filter((s) => s !== "read:webhooks"), ...WRITE_SCOPES].sort());
  expect([...ROLE_SCOPES.viewer].sort()).toEqual([...READ_SCOPES].sort());
  expect(scopesBullet.replace(/\s+/g, " ")).toContain(
    "Session roles: `owner` and `admin` hold every scope; `member` every read scope but `read:webhooks`, and `write:tables`; `viewer` every read scope but `read:webhooks`.",
  );
});
