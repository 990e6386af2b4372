// Mailchimp Marketing API v3: batch subscribe/update of list members (≤ 500 a call, per-member
// errors in the 200 answer) and removal by member hash. Auth: HTTP Basic `anystring:<apiKey>`.
import { createHash } from "node:crypto";
import { chunk, errorFor, send, withCallRunners, type ClientOptions, type DestinationClient, type OperationResult, type SubscriberInput } from "./client";

const BATCH_LIMIT = 500;
/** Mailchimp allows 10 simultaneous connections per key; leave room for other callers (deletes are one call each). */
const DELETE_CONCURRENCY = 4;

/** Mailchimp's member id: md5 of the lower-cased address. */
export const subscriberHash = (email: string) => createHash("md5").update(email.toLowerCase()).digest("hex");

/** `https://<dc>.api.mailchimp.com` from a key ending in `-<dc>`, the data centre it lives in. */
export function mailchimpBaseUrlForKey(apiKey: string): string | undefined {
  const dc = /-([a-z]+\d+)$/.exec(apiKey)?.[1];
  return dc ? `https://${dc}.api.mailchimp.com` : undefined;
}

interface BatchAnswer {
  errors?: { email_address?: string; error?: string; error_code?: string }[];
}

export function mailchimpClient(opts: ClientOptions): DestinationClient {
  const base = opts.baseUrl.replace(/\/+$/, "");
  const headers = {
    authorization: `Basic ${Buffer.from(`anystring:${opts.apiKey}`).toString("base64")}`,
    "content-type": "application/json",
    accept: "application/json",
  };
  const listUrl = (listId: string) => `${base}/3.0/lists/${encodeURIComponent(listId)}`;

  async function subscribeChunk(listId: string, members: SubscriberInput[]): Promise<OperationResult> {
    const body = {
      members: members.map((m) => ({
        email_address: m.email,
        status: "subscribed",
        status_if_new: "subscribed",
        merge_fields: mergeFields(m),
      })),
      update_existing: true,
    };
    const what = "batch subscribe";
    const res = await send(opts, what, listUrl(listId), { method: "POST", headers, body: JSON.stringify(body) });
    if (!res.ok) throw await errorFor("mailchimp", what, res, opts.apiKey);
    const answer = (await res.json().catch(() => ({}))) as BatchAnswer;
    const failed = (answer.errors ?? []).map((e) => ({
      email: e.email_address ?? "",
      reason: (e.error_code ?? e.error ?? "rejected").slice(0, 100),
    }));
    return { accepted: members.length - failed.length, failed };
  }

  /** 404 means the member is not (or no longer) on the list: the removal is done either way. */
  async function removeOne(listId: string, email: string): Promise<OperationResult> {
    const what = "remove member";
    const url = `${listUrl(listId)}/members/${subscriberHash(email)}`;
    const res = await send(opts, what, url, { method: "DELETE", headers });
    if (!res.ok && res.status !== 404) throw await errorFor("mailchimp", what, res, opts.apiKey);
    await res.body?.cancel();
    return { accepted: 1, failed: [] };
  }

  return withCallRunners({
    provider: "mailchimp",
    concurrency: DELETE_CONCURRENCY,
    subscribeCalls: (listId, members) =>
      chunk(members, BATCH_LIMIT).map((part) => ({ emails: part.map((m) => m.email), run: () => subscribeChunk(listId, part) })),
    removeCalls: (listId, emails) => emails.map((email) => ({ emails: [email], run: () => removeOne(listId, email) })),
  });
}

/** Names we do not know are left out rather than sent blank, which would erase the list's copy. */
function mergeFields(m: SubscriberInput): Record<string, string> {
  const fields: Record<string, string> = {};
  if (m.givenName) fields.FNAME = m.givenName;
  if (m.familyName) fields.LNAME = m.familyName;
  return fields;
}
