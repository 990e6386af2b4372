// What a webhook endpoint may be made of: shared by the rules (endpoints.ts), the route table's body
// parsers and the OpenAPI document, without loading the sender.

/** spec 2.6: the entity types of the event log; `*` subscribes to all. */
export const WEBHOOK_TOPICS = ["guest_profile", "reservation", "transaction", "action", "loyalty_program", "membership", "review", "channel", "space"] as const;
export const MAX_URL = 2048;
export const MAX_DESCRIPTION = 500;
export const MAX_PROPERTY_IDS = 100;
