// SSRF guard of the webhook sender. A receiver URL names a host the caller chose, so the sender
// must never be turned against the service's own network: loopback, private, link-local (the cloud
// metadata address 169.254.169.254 among them), CGNAT, multicast and reserved ranges are refused.
//
// Checked twice: when an endpoint is created (the URL's form, and its name resolved once), and at
// every send: the name is resolved, every address checked, and the connection made to the checked
// address itself (http.ts pins it), so a DNS answer that changes between check and connect (DNS
// rebinding) cannot move the request. The resolver is injectable: tests make names "resolve" to
// private addresses without a packet leaving the machine.
//
// GCS_WEBHOOKS_ALLOW_PRIVATE=true lifts the address rule (the demo and the tests deliver to a
// receiver on 127.0.0.1); production (NODE_ENV=production) accepts https only.
import { lookup } from "node:dns/promises";
import { BlockList, isIP } from "node:net";

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}
/** host name → every address it resolves to. */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolver: Resolver = async (hostname) =>
  (await lookup(hostname, { all: true, verbatim: true })).map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));

export interface UrlPolicy {
  /** Loopback and private addresses allowed (GCS_WEBHOOKS_ALLOW_PRIVATE). */
  allowPrivate: boolean;
  /** Only https (NODE_ENV=production). */
  httpsOnly: boolean;
}

export class WebhookUrlError extends Error {}

const FORBIDDEN = new BlockList();
for (const [net, prefix] of [
  ["0.0.0.0", 8], // "this network"
  ["10.0.0.0", 8],
  ["100.64.0.0", 10], // CGNAT
  ["127.0.0.0", 8],
  ["169.254.0.0", 16], // link-local, cloud metadata
  ["172.16.0.0", 12],
  ["192.0.0.0", 24], // IETF protocol assignments
  ["192.0.2.0", 24], // documentation
  ["192.88.99.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15], // benchmarking
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4], // reserved, broadcast
] as const) FORBIDDEN.addSubnet(net, prefix, "ipv4");
for (const [net, prefix] of [
  ["::", 128],
  ["::1", 128],
  ["64:ff9b::", 96], // NAT64 (embeds an IPv4 address)
  ["100::", 64],
  ["2001:db8::", 32],
  ["fc00::", 7], // unique local
  ["fe80::", 10], // link-local
  ["fec0::", 10],
  ["ff00::", 8], // multicast
] as const) FORBIDDEN.addSubnet(net, prefix, "ipv6");

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet("127.0.0.0", 8, "ipv4");
LOOPBACK.addAddress("::1", "ipv6");

/** `::ffff:10.0.0.1` → `10.0.0.1`: a mapped IPv4 address is judged as the IPv4 address. */
function unmapped(address: string): { address: string; family: "ipv4" | "ipv6" } {
  const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (m) return { address: m[1], family: "ipv4" };
  return { address, family: isIP(address) === 6 ? "ipv6" : "ipv4" };
}

/** Why the sender may not connect to this address, or undefined when it may. */
export function refusalOf(address: string, policy: Pick<UrlPolicy, "allowPrivate">): string | undefined {
  if (isIP(address) === 0) return `${address} is not an IP address`;
  const a = unmapped(address);
  if (policy.allowPrivate) {
    // Even the demo switch never allows the metadata service or "this network".
    if (a.address === "169.254.169.254" || a.address.startsWith("0.") || a.address === "::") return `${address} is a reserved address`;
    return undefined;
  }
  if (LOOPBACK.check(a.address, a.family)) return `${address} is a loopback address`;
  if (FORBIDDEN.check(a.address, a.family)) return `${address} is a private, link-local or reserved address`;
  return undefined;
}

/** The URL's form: absolute http(s), no credentials, a host; an IP literal is checked here. */
export function checkUrlForm(raw: string, policy: UrlPolicy): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new WebhookUrlError("url must be an absolute URL, e.g. https://example.com/webhooks");
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") throw new WebhookUrlError("url must use https (or http outside production)");
  if (policy.httpsOnly && url.protocol !== "https:") throw new WebhookUrlError("url must use https");
  if (url.username || url.password) throw new WebhookUrlError("url must not carry credentials");
  if (raw.length > 2048) throw new WebhookUrlError("url is longer than 2048 characters");
  const host = hostOf(url);
  if (!host) throw new WebhookUrlError("url must name a host");
  if (isIP(host)) {
    const why = refusalOf(host, policy);
    if (why) throw new WebhookUrlError(`url refused: ${why}`);
  } else if (!policy.allowPrivate && /(^|\.)(localhost|localdomain|internal|local)$/i.test(host.replace(/\.$/, ""))) {
    throw new WebhookUrlError(`url refused: ${host} names a local host`);
  }
  return url;
}

/** The URL's host without IPv6 brackets. */
export const hostOf = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, "$1");

/**
 * Resolves the URL's host and checks every address: one refused address refuses the URL (a name
 * with a public and a private address is how rebinding starts). Returns the address to connect to.
 */
export async function resolveChecked(url: URL, policy: UrlPolicy, resolve: Resolver): Promise<ResolvedAddress> {
  const host = hostOf(url);
  const family = isIP(host);
  const addresses: ResolvedAddress[] = family ? [{ address: host, family: family === 6 ? 6 : 4 }] : await resolveOrFail(resolve, host);
  if (addresses.length === 0) throw new WebhookUrlError(`${host} does not resolve`);
  for (const a of addresses) {
    const why = refusalOf(a.address, policy);
    if (why) throw new WebhookUrlError(`url refused: ${host} resolves to ${why}`);
  }
  return addresses[0];
}

async function resolveOrFail(resolve: Resolver, host: string): Promise<ResolvedAddress[]> {
  try {
    return await resolve(host);
  } catch (err) {
    throw new WebhookUrlError(`${host} does not resolve (${(err as NodeJS.ErrnoException).code ?? "lookup failed"})`);
  }
}
