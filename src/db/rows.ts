// The row shapes moved to the data layer (src/data/*.ts) and their GraphQL projections to
// src/graphql/row-types.ts; test/unit/selection.test.ts still imports them from here.
export { GUEST, RESERVATION } from "../graphql/row-types";
export { RESERVATION_ROW } from "../data/stays";
