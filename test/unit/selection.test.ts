// graphql/selection.ts: the columns a selection reads, fragments followed, whole shape when unsure.
import { Kind, parse, type FieldNode, type FragmentDefinitionNode, type GraphQLResolveInfo, type OperationDefinitionNode } from "graphql";
import { GUEST, RESERVATION } from "../../src/graphql/row-types";
import { RESERVATION_ROW } from "../../src/data/stays";
import { selectedShape, selectedUnder, type RowType } from "../../src/graphql/selection";

/** The resolve info of the operation's first root field, as far as selection.ts reads it. */
function infoOf(document: string) {
  const doc = parse(document);
  const operation = doc.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION)!;
  const fragments = Object.fromEntries(
    doc.definitions.filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION).map((f) => [f.name.value, f]),
  );
  const root = operation.selectionSet.selections[0] as FieldNode;
  return { fieldNodes: [root], fragments } as unknown as GraphQLResolveInfo;
}
const columns = (document: string, type: RowType, under?: string) => Object.keys(selectedShape(infoOf(document), type, under));

describe("selectedShape", () => {
  it("reads the selected columns, the always-needed ones and what derived fields read, in table order", () => {
    expect(columns(`{ reservations { status nights guest { id } __typename } }`, RESERVATION)).toEqual([
      "id", "guestProfileId", "status", "arrivalDate", "departureDate",
    ]);
  });

  it("follows named and inline fragments, aliases read their field", () => {
    const document = `
      query { guests { nodes { ...Names ... on Guest { mail: email } reservations { id } } nextCursor } }
      fragment Names on Guest { givenName ... { familyName } }`;
    expect(columns(document, GUEST, "nodes")).toEqual(["id", "masterProfileId", "givenName", "familyName", "email", "createdAt"]);
  });

  it("takes the whole shape for a field it cannot account for", () => {
    const shape = selectedShape(infoOf(`{ reservations { id somethingNew } }`), RESERVATION);
    expect(shape).toBe(RESERVATION_ROW);
  });

  it("hands back the same shape object for the same column set, so SQL text is reused", () => {
    const a = selectedShape(infoOf(`{ reservations { status } }`), RESERVATION);
    const b = selectedShape(infoOf(`{ reservations { status id } }`), RESERVATION);
    expect(a).toBe(b);
  });
});

describe("selectedUnder", () => {
  it("names the fields below a page's nodes, fragments followed, aliases by their field", () => {
    const document = `
      query { tableMembers(tableId: "x") { data: nodes { ...Member } hasMore } }
      fragment Member on TableMember { member_id: memberId ... on TableMember { guest { id } } }`;
    expect([...selectedUnder(infoOf(document), "nodes")]).toEqual(["memberId", "guest"]);
  });

  it("is empty when nothing is selected there", () => {
    expect(selectedUnder(infoOf(`{ tableMembers(tableId: "x") { hasMore } }`), "nodes").size).toBe(0);
  });
});
