// GCS_GRAPHQL_TRUSTED_DOCUMENTS: /graphql runs only the listed documents (by sha256 of their text);
// the REST facade's own operations always run; a malformed allow-list stops start-up.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { documentHash, loadTrustedDocuments } from "../../src/graphql/trusted-documents";
import { startTestApp, type TestApp } from "../helpers/app";

const TRUSTED = "query Dashboard($limit: Int) { guests(limit: $limit) { nodes { id } hasMore } }";
const dir = mkdtempSync(path.join(tmpdir(), "gcs-trusted-"));
const file = (name: string, content: string) => {
  const at = path.join(dir, name);
  writeFileSync(at, content);
  return at;
};

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ GCS_GRAPHQL_TRUSTED_DOCUMENTS: file("trusted.json", JSON.stringify({ [documentHash(TRUSTED)]: TRUSTED })) });
});
afterAll(async () => {
  await t.close();
  rmSync(dir, { recursive: true, force: true });
});

const token = () => t.manifest.groups.A.credentials.api_key;
const gql = (query: string, variables?: Record<string, unknown>) =>
  t.api.post("/graphql").set("Content-Type", "application/json").set("Authorization", `Bearer ${token()}`).send({ query, variables });

describe("with GCS_GRAPHQL_TRUSTED_DOCUMENTS", () => {
  it("runs a listed document", async () => {
    const res = await gql(TRUSTED, { limit: 2 });
    expect([res.status, res.body.errors]).toEqual([200, undefined]);
    expect(res.body.data.guests.nodes).toHaveLength(2);
  });

  it("refuses any other document with 400 untrusted_document, the same text reformatted included", async () => {
    for (const query of ["{ viewer { kind } }", TRUSTED.replace("{ nodes", "{  nodes"), `${TRUSTED}\n`]) {
      const res = await gql(query, { limit: 2 });
      expect(res.status).toBe(400);
      expect(res.body.data).toBeUndefined();
      expect(res.body.errors).toEqual([expect.objectContaining({ extensions: expect.objectContaining({ code: "untrusted_document" }) })]);
    }
  });

  it("the REST facade's own operations still run", async () => {
    const res = await t.api.get("/v1/guests?limit=2").set("Authorization", `Bearer ${token()}`);
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveLength(2);
  });
});

describe("the allow-list file", () => {
  it("may be an array of hashes", () => {
    expect(loadTrustedDocuments(file("array.json", JSON.stringify([documentHash(TRUSTED)])))).toEqual(new Set([documentHash(TRUSTED)]));
  });

  it.each([
    ["not JSON", "{", /cannot read it as JSON/],
    ["empty", "[]", /expected a non-empty array/],
    ["a hash in upper case", JSON.stringify([documentHash(TRUSTED).toUpperCase()]), /is not a sha256 in lower-case hex/],
    ["a document under another hash", JSON.stringify({ [documentHash("{ viewer { kind } }")]: TRUSTED }), /does not have that sha256/],
  ])("%s stops start-up, naming the file", (name, content, message) => {
    const at = file(`${name.replace(/\W+/g, "-")}.json`, content);
    expect(() => loadTrustedDocuments(at)).toThrow(message);
    expect(() => loadTrustedDocuments(at)).toThrow(at);
  });
});
