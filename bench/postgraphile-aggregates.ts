// The PostGraphile peer's extra preset for the dashboard aggregates (bench/run.ts
// postGraphileAggregates): @graphile/pg-aggregates for groupedAggregates, and the connection-filter
// plugin, the aggregates README's companion, so that the date range and the status filter reach SQL
// instead of aggregating every year. Loaded by the postgraphile CLI (-P <this file>) under tsx.
import { PgAggregatesPreset } from "@graphile/pg-aggregates";
import { PostGraphileConnectionFilterPreset } from "postgraphile-plugin-connection-filter";
// The types of GraphileConfig.Plugin's `schema` hooks.
import type {} from "postgraphile";

const truncatable = new Set(["date", "timestamp", "timestamptz"]);

/**
 * A `<COLUMN>_TRUNCATED_TO_MONTH` group-by, the documented way to add a grouping derivative (the
 * plugin ships only hour and day, on timestamps). Months are UTC, not the property's calendar.
 */
const TruncatedToMonthPlugin: GraphileConfig.Plugin = {
  name: "BenchTruncatedToMonthPlugin",
  version: "0.0.0",
  after: ["PgAggregatesSpecsPlugin"],
  schema: {
    hooks: {
      build(build) {
        // Set by then: this hook runs after PgBasicsPlugin's and PgAggregatesSpecsPlugin's.
        const sql = build.sql!;
        const { date } = build.dataplanPg!.TYPES;
        build.pgAggregateGroupBySpecs!.push({
          id: "truncated-to-month",
          isSuitableType: (codec) => truncatable.has(codec.name),
          // A date, as the service's periods are (date_trunc() alone gives a timestamp).
          sqlWrap: (frag) => sql`date_trunc('month', ${frag})::date`,
          sqlWrapCodec: () => date,
        });
        return build;
      },
    },
  },
};

const preset: GraphileConfig.Preset = {
  extends: [PgAggregatesPreset, PostGraphileConnectionFilterPreset],
  plugins: [TruncatedToMonthPlugin],
  // PostGraphile offers order, filter and so group-by only on indexed columns; the service groups
  // and filters on unindexed ones (status, currency, rating, published_at) too.
  disablePlugins: ["PgIndexBehaviorsPlugin"],
};

export default preset;
