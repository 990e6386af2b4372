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
// An IPv6 address is also judged as every IPv4 address it embeds (::ffff:a9fe:a9fe is
// 169.254.169.254; NAT64, 6to4 and Teredo carry one too): embeddedIPv4s.
//
// GCS_WEBHOOKS_ALLOW_PRIVATE=true lifts the address rule (the demo and the tests deliver to a
// receiver on 127.0.0.1), except for the cloud's metadata and credential addresses and "this
// network" (0.0.0.0, ::), refused always; production (NODE_ENV=production) accepts https only.
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
// The IPv6 forms that embed an IPv4 address (mapped, compatible, NAT64, 6to4, Teredo) are not listed:
// they are judged by the IPv4 address they carry (embeddedIPv4s), so a public one stays reachable
// (a DNS64 network answers every IPv4-only name with a 64:ff9b:: address).
for (const [net, prefix] of [
  ["::", 128],
  ["::1", 128],
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

// Refused whatever GCS_WEBHOOKS_ALLOW_PRIVATE says: the cloud's credential services and "this
// network" (0.0.0.0 and :: reach the machine's own ports). The demo needs loopback, never these.
const ALWAYS_REFUSED = new BlockList();
ALWAYS_REFUSED.addSubnet("0.0.0.0", 8, "ipv4");
ALWAYS_REFUSED.addSubnet("169.254.0.0", 16, "ipv4"); // link-local: metadata 169.254.169.254, container credentials 169.254.170.2
ALWAYS_REFUSED.addAddress("100.100.100.200", "ipv4"); // Alibaba Cloud metadata
ALWAYS_REFUSED.addAddress("::", "ipv6");
ALWAYS_REFUSED.addSubnet("fd00:ec2::", 32, "ipv6"); // AWS metadata over IPv6 (fd00:ec2::254) and its other services

/** An IPv6 address (as isIP accepts it, zone removed) → its 16 bytes. */
function ipv6Bytes(address: string): number[] {
  let text = address;
  const tail: number[] = [];
  const dotted = /^(.*:)(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    text = dotted[1] + "0:0"; // the dotted quad holds the last two groups
    tail.push(...dotted[2].split(".").map(Number));
  }
  const [head, rest] = text.split("::") as [string, string | undefined];
  const groups = (part: string) => (part ? part.split(":").map((g) => parseInt(g, 16)) : []);
  const left = groups(head);
  const right = rest === undefined ? [] : groups(rest);
  const all = [...left, ...Array(8 - left.length - right.length).fill(0), ...right];
  const bytes = all.flatMap((g) => [g >> 8, g & 0xff]);
  if (tail.length) bytes.splice(12, 4, ...tail);
  return bytes;
}

const startsWith = (bytes: number[], prefix: number[]) => prefix.every((v, i) => bytes[i] === v);

// The local-use NAT64 prefix 64:ff9b:1::/48 (RFC 8215) embeds the IPv4 address where the operator's
// prefix length puts it (RFC 6052 section 2.2: /48, /56, /64 or /96; bits 64-71 are never address
// bits): each layout is the IPv4 address's bytes, and the bytes that layout keeps at zero.
const LOCAL_NAT64_LAYOUTS = [
  { at: [6, 7, 9, 10], zero: [8, 11, 12, 13, 14, 15] },
  { at: [7, 9, 10, 11], zero: [8, 12, 13, 14, 15] },
  { at: [9, 10, 11, 12], zero: [8, 13, 14, 15] },
  { at: [12, 13, 14, 15], zero: [6, 7, 8, 9, 10, 11] },
];

/**
 * Every IPv4 address an address may stand for: an IPv4 address is its own; an IPv6 one carries one
 * when IPv4-mapped (::ffff:a.b.c.d), IPv4-translated (::ffff:0:a.b.c.d), IPv4-compatible
 * (::a.b.c.d), NAT64 (64:ff9b::/96; 64:ff9b:1::/48 at each layout its bytes fit, every layout when
 * none fits), 6to4 (2002::/16) or Teredo (2001::/32: its server, and its client, stored inverted).
 * Empty for any other IPv6 address.
 */
export function embeddedIPv4s(address: string): string[] {
  const ip = address.replace(/%.*$/, "");
  if (isIP(ip) === 4) return [ip];
  if (isIP(ip) !== 6) return [];
  const b = ipv6Bytes(ip);
  const zero = (at: number[]) => at.every((i) => b[i] === 0);
  const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);
  const quadAt = (at: number[]) => at.map((i) => b[i]).join(".");
  const last = range(12, 16);
  if (zero(range(0, 10)) && b[10] === 0xff && b[11] === 0xff) return [quadAt(last)]; // ::ffff:a.b.c.d
  if (zero(range(0, 8)) && b[8] === 0xff && b[9] === 0xff && zero([10, 11])) return [quadAt(last)]; // ::ffff:0:a.b.c.d
  // ::a.b.c.d, but :: and ::1 are IPv6's own unspecified and loopback addresses.
  if (zero(range(0, 15)) ? b[15] > 1 : zero(range(0, 12))) return [quadAt(last)];
  if (startsWith(b, [0, 0x64, 0xff, 0x9b]) && zero(range(4, 12))) return [quadAt(last)]; // 64:ff9b::/96
  if (startsWith(b, [0, 0x64, 0xff, 0x9b, 0, 1])) {
    const fitting = LOCAL_NAT64_LAYOUTS.filter((l) => zero(l.zero));
    return (fitting.length ? fitting : LOCAL_NAT64_LAYOUTS).map((l) => quadAt(l.at));
  }
  if (startsWith(b, [0x20, 0x02])) return [quadAt(range(2, 6))]; // 6to4
  if (startsWith(b, [0x20, 0x01, 0, 0])) return [quadAt(range(4, 8)), last.map((i) => b[i] ^ 0xff).join(".")]; // Teredo
  return [];
}

/** Why the sender may not connect to this address, or undefined when it may. */
export function refusalOf(address: string, policy: Pick<UrlPolicy, "allowPrivate">): string | undefined {
  if (isIP(address) === 0) return `${address} is not an IP address`;
  const ip = address.replace(/%.*$/, "");
  // The address is judged as itself and as every IPv4 address it carries: one refusal refuses it.
  // The embedded IPv4 addresses first, so that a refusal names the one it found.
  const forms: { address: string; family: "ipv4" | "ipv6" }[] = embeddedIPv4s(ip).filter((v4) => v4 !== ip).map((v4) => ({ address: v4, family: "ipv4" }));
  forms.push({ address: ip, family: isIP(ip) === 6 ? "ipv6" : "ipv4" });
  const named = (a: string) => (a === ip ? address : `${address} (${a})`);
  for (const f of forms) if (ALWAYS_REFUSED.check(f.address, f.family)) return `${named(f.address)} is a metadata, link-local or unspecified address (refused even with GCS_WEBHOOKS_ALLOW_PRIVATE)`;
  if (policy.allowPrivate) return undefined;
  for (const f of forms) {
    if (LOOPBACK.check(f.address, f.family)) return `${named(f.address)} is a loopback address`;
    if (FORBIDDEN.check(f.address, f.family)) return `${named(f.address)} is a private, link-local or reserved address`;
  }
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
