// Klaviyo API (revision 2024-10-15, JSON:API bodies): bulk subscribe jobs add profiles to a list
// with email-marketing consent; bulk delete jobs unsubscribe them from that list. Both answer
// 202 Accepted and run asynchronously, so there are no per-member results to read back.
import { chunk, errorFor, send, withCallRunners, type ClientOptions, type DestinationClient, type OperationResult, type SubscriberInput } from "./client";

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

  async function createJob(what: string, path: string, body: unknown, accepted: number): Promise<OperationResult> {
    const res = await send(opts, what, `${base}${path}`, { method: "POST", headers, body: JSON.stringify(body) });
    if (!res.ok) throw await errorFor("klaviyo", what, res, opts.apiKey);
    await res.body?.cancel(); // 202 with no useful body
    return { accepted, failed: [] };
  }

  const listRelationship = (listId: string) => ({ list: { data: { type: "list", id: listId } } });

  // Jobs of one list run one at a time: Klaviyo applies them in the order they were created.
  return withCallRunners({
    provider: "klaviyo",
    concurrency: 1,
    subscribeCalls: (listId, members) =>
      chunk(members, SUBSCRIBE_LIMIT).map((part) => ({
        emails: part.map((m) => m.email),
        run: () =>
          createJob("subscribe job", "/api/profile-subscription-bulk-create-jobs", {
            data: {
              type: "profile-subscription-bulk-create-job",
              attributes: { profiles: { data: part.map(subscribeProfile) } },
              relationships: listRelationship(listId),
            },
          }, part.length),
      })),
    removeCalls: (listId, emails) =>
      chunk(emails, UNSUBSCRIBE_LIMIT).map((part) => ({
        emails: part,
        run: () =>
          createJob("unsubscribe job", "/api/profile-subscription-bulk-delete-jobs", {
            data: {
              type: "profile-subscription-bulk-delete-job",
              attributes: { profiles: { data: part.map(unsubscribeProfile) } },
              relationships: listRelationship(listId),
            },
          }, part.length),
      })),
  });
}

const subscribeProfile = (m: SubscriberInput) => ({
  type: "profile",
  attributes: { email: m.email, subscriptions: { email: { marketing: { consent: "SUBSCRIBED" } } } },
});

const unsubscribeProfile = (email: string) => ({
  type: "profile",
  attributes: { email, subscriptions: { email: { marketing: { consent: "UNSUBSCRIBED" } } } },
});
