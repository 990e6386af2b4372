// The whole /v1 surface as data: each route names its scope, its GraphQL operation, how request
// parameters become variables, and how the result becomes the response body.
import { instant, int, str, uuid, type ParamSpec } from "./params";

export interface RouteSpec {
  method: "GET" | "POST";
  /** Express path, e.g. /v1/guests/:id */
  path: string;
  /** First required scope: echoed in 403s raised before the operation runs. */
  scope: string;
  /** Named operation in rest/operations/*.graphql. */
  operation: string;
  pathParams?: Record<string, ParamSpec>;
  query?: Record<string, ParamSpec>;
  /**
   * "body": the operation's data is the body (`{ data: … }` via the `data:` alias).
   * "unwrap": the single root field's value is the body (keyset pages, aggregate objects).
   */
  envelope: "body" | "unwrap";
  /** Name of the MCP tool that serves this route (read routes only), with a one-line description. */
  mcp?: { tool: string; description: string };
}

const keyset = { limit: int("limit"), cursor: str("cursor") };

export const routes: RouteSpec[] = [
  { method: "GET", path: "/v1/properties", scope: "read:properties", operation: "ListProperties", envelope: "body",
    mcp: { tool: "list_properties", description: "Every property of the group (hotels, restaurants …)." } },
  {
    method: "GET",
    path: "/v1/properties/:id",
    scope: "read:properties",
    operation: "GetProperty",
    pathParams: { id: uuid("id") },
    envelope: "body",
    mcp: { tool: "get_property", description: "One property by id." },
  },
  { method: "GET", path: "/v1/integrations", scope: "read:properties", operation: "ListIntegrations", envelope: "body",
    mcp: { tool: "list_integrations", description: "The integration roster: source systems mapped to properties." } },
  {
    method: "GET",
    path: "/v1/integrations/:id/connection",
    scope: "read:properties",
    operation: "GetIntegrationConnection",
    pathParams: { id: uuid("integrationId") },
    envelope: "body",
  },
  {
    method: "GET",
    path: "/v1/guests",
    scope: "read:guests",
    operation: "ListGuests",
    query: {
      ...keyset,
      source_id: str("filter.sourceId"),
      integration_id: uuid("filter.integrationId"),
      property_id: uuid("filter.propertyId"),
      master_profile_id: uuid("filter.masterProfileId"),
      email: str("filter.email"),
      updated_since: instant("filter.updatedSince"),
    },
    envelope: "unwrap",
    mcp: {
      tool: "list_guests",
      description: "Guest profiles, keyset-paged (pass next_cursor back as cursor). source_id lookups need integration_id.",
    },
  },
  {
    method: "GET",
    path: "/v1/guests/:id",
    scope: "read:guests",
    operation: "GetGuest",
    pathParams: { id: uuid("id") },
    envelope: "body",
    mcp: { tool: "get_guest", description: "One guest profile by id." },
  },
];
