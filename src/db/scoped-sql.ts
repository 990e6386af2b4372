// The scoped SQL builder moved to the data layer (src/data/sql.ts); the tests still import it from here.
export { scopedSql, sql } from "../data/sql";
