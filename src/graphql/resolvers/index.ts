import type { RequestContext } from "../../context";
import { DateScalar, DateTime, JSONScalar, Long, UUID } from "../scalars";
import { consentResolvers } from "./consents";
import { destinationResolvers } from "./destinations";
import { engagementResolvers } from "./engagement";
import { eventResolvers } from "./events";
import { guestResolvers } from "./guests";
import { guestContextResolvers } from "./guest-context";
import { guestSearchResolvers } from "./guest-search";
import { contactPermissionResolvers } from "./contact-permission";
import { loyaltyResourceResolvers } from "./loyalty-resources";
import { masterProfileResolvers } from "./master-profiles";
import { masterProfileLinkResolvers } from "./master-profile-links";
import { metricResolvers } from "./metrics";
import { propertyResolvers } from "./properties";
import { stayResolvers } from "./stays";
import { tableResolvers } from "./tables";
import { webhookResolvers } from "./webhooks";
import { guestLookupResolvers } from "./guest-lookup";
import { tableReachabilityResolvers } from "./table-reachability";

const viewerResolvers = {
  Query: {
    viewer: (_: unknown, __: unknown, ctx: RequestContext) => ({
      kind: ctx.credential.kind,
      propertyGroupId: ctx.scope.propertyGroupId,
      propertyId: ctx.scope.propertyId,
      scopes: [...ctx.credential.scopes].sort(),
    }),
  },
};

export const resolvers = [
  { DateTime, Date: DateScalar, UUID, JSON: JSONScalar, Long },
  viewerResolvers,
  propertyResolvers,
  guestResolvers,
  masterProfileResolvers,
  stayResolvers,
  consentResolvers,
  engagementResolvers,
  loyaltyResourceResolvers,
  tableResolvers,
  eventResolvers,
  destinationResolvers,
  guestSearchResolvers,
  guestContextResolvers,
  contactPermissionResolvers,
  metricResolvers,
  webhookResolvers,
  masterProfileLinkResolvers,
  guestLookupResolvers,
  tableReachabilityResolvers,
];
