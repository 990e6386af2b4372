// Klaviyo API (revision 2024-10-15, JSON:API bodies): bulk subscribe jobs add profiles to a list
// with email-marketing consent; bulk delete jobs unsubscribe them from that list. Both answer
// 202 Accepted and run asynchronously, so there are no per-member results to read back.
import { chunk, errorFor, send, type ClientOptions, type DestinationClient, type SubscriberInput } from "./client";

export const KLAVIYO_REVISION = "2024-10-15";
/** Documented per-call limits of the two job endpoints. */
const SUBSCRIBE_LIMIT = 1000;
const UNSUBSCRIBE_LIMIT = 100;

export function klaviyoClient(opts: ClientOptions): DestinationClient {
  const base = opts.baseUrl.replace(/\/+$/, "");
  const headers = {
    authorization: `Klaviyo-API-Key ${opts.apiKey}`,
    revision: KLAVIYO_REVISION,
    "content-type": "application/vnd.api+json",
    accept: "application/vnd.api+json",
  };

  async function createJob(what: string, path: string, body: unknown): Promise<void> {
    const res = await send(opts, what, `${base}${path}`, { method: "POST", headers, body: JSON.stringify(body) });
    if (!res.ok) throw await errorFor("klaviyo", what, res, opts.apiKey);
    await res.body?.cancel(); // 202 with no useful body
  }

  const listRelationship = (listId: string) => ({ list: { data: { type: "list", id: listId } } });

  return {
    provider: "klaviyo",
    async upsertSubscribers(listId, members) {
      for (const part of chunk(members, SUBSCRIBE_LIMIT)) {
        await createJob("subscribe job", "/api/profile-subscription-bulk-create-jobs", {
          data: {
            type: "profile-subscription-bulk-create-job",
            attributes: { profiles: { data: part.map(subscribeProfile) } },
            relationships: listRelationship(listId),
          },
        });
      }
      return { accepted: members.length, failed: [] };
    },
    async remove(listId, emails) {
      for (const part of chunk(emails, UNSUBSCRIBE_LIMIT)) {
        await createJob("unsubscribe job", "/api/profile-subscription-bulk-delete-jobs", {
          data: {
            type: "profile-subscription-bulk-delete-job",
            attributes: { profiles: { data: part.map(unsubscribeProfile) } },
            relationships: listRelationship(listId),
          },
        });
      }
      return { accepted: emails.length, failed: [] };
    },
  };
}

const subscribeProfile = (m: SubscriberInput) => ({
  type: "profile",
  attributes: { email: m.email, subscriptions: { email: { marketing: { consent: "SUBSCRIBED" } } } },
});

const unsubscribeProfile = (email: string) => ({
  type: "profile",
  attributes: { email, subscriptions: { email: { marketing: { consent: "UNSUBSCRIBED" } } } },
});
