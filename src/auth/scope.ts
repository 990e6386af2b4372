// Credential + X-Property-Id → the request's data scope. Every resolver query is ANDed with it.
import type { DataClient as PrismaClient } from "../data/client";
import { propertyInGroup } from "../data/stores/credentials";
import { forbidden, invalidRequest } from "../errors";
import type { Credential } from "./authenticate";
import { isUuid } from "../validate";
import { asGroup } from "../db/session";
import type { Scope } from "../data/scope";

export type { Scope };


export async function resolveScope(
  credential: Credential,
  propertyHeader: string | undefined,
  prisma: PrismaClient,
): Promise<Scope> {
  const group = credential.propertyGroupId;
  if (credential.pinnedPropertyId) return { propertyGroupId: group, propertyId: credential.pinnedPropertyId };
  // Only an absent header means the whole group: an empty one is a value, and not a uuid (a client
  // that meant to narrow and sent nothing must not silently read every property).
  if (propertyHeader === undefined) return { propertyGroupId: group, propertyId: null };
  if (credential.kind === "session") {
    throw forbidden("X-Property-Id is not accepted with web-app session tokens; they always see the whole group");
  }
  if (propertyHeader === "") throw invalidRequest("X-Property-Id is empty: send a property's uuid, e.g. 3f1c2a9e-7d4b-4c1a-9e2f-5b6a7c8d9e0f, or leave the header out");
  if (!isUuid(propertyHeader)) throw invalidRequest("X-Property-Id must be a uuid, e.g. 3f1c2a9e-7d4b-4c1a-9e2f-5b6a7c8d9e0f");
  const propertyId = await asGroup(group, () => propertyInGroup(prisma, propertyHeader, group));
  if (!propertyId) throw forbidden("X-Property-Id is not a property of this credential's group");
  return { propertyGroupId: group, propertyId };
}
