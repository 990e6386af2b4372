// The GraphQL contract: any change to schema.graphql shows up here and must be reviewed by updating
// the snapshot deliberately (`npx jest -u test/unit/schema-contract.test.ts`). CI runs Jest with
// --ci, so a missing or stale snapshot fails.
import { parse, print } from "graphql";
import { buildSchema, loadTypeDefs } from "../../src/graphql/schema";
import { prepareOperations } from "../../src/api/execute";

describe("GraphQL contract", () => {
  it("matches the reviewed schema, directives and descriptions included", () => {
    // print(parse(…)) drops comments and formatting but keeps every type, field, argument,
    // description and @requiresScope, so only real contract changes show.
    expect(print(parse(loadTypeDefs()))).toMatchSnapshot();
  });

  it("every REST operation validates against it", () => {
    const operations = prepareOperations(buildSchema());
    expect(operations.size).toBeGreaterThan(0);
    expect([...operations.keys()]).toEqual(expect.arrayContaining(["ListGuests", "GetGuest", "ListIntegrations", "ListProperties"]));
  });
});
