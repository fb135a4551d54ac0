import { isIP } from 'node:net';
import { WebhookAddressNotAllowedError, WebhookCredentialsInUrlError, WebhookInvalidUrlError, WebhookUnsupportedSchemeError } from './webhook.errors.ts';

/*
 * Where a webhook may point. The service calls these URLs from its own network (SSRF), so a URL
 * naming a loopback, private, link-local or otherwise non-public address is refused when it is
 * saved, and every address a host name resolves to is checked again, by the same classification
 * (`classifyAddress`), when a delivery connects (webhook-delivery.ts), so a name that resolves
 * (or later re-resolves) to an inside address is refused too. WEBHOOK_ALLOW_PRIVATE=true lifts
 * both checks for development and tests; a URL naming this service itself is refused always.
 *
 * An address is judged as the network will use it: an IPv6 form that carries an IPv4 address
 * (IPv4-mapped, IPv4-translated, NAT64's well-known prefix, ISATAP) is judged by that IPv4
 * address, and the IANA special-purpose ranges that are not globally reachable are refused
 * outright, transition forms whose route the service does not control among them (6to4, Teredo,
 * IPv4-compatible, local-use NAT64). Decisions: docs/decisions.md ("Webhooks": "Where a webhook
 * may point").
 */

/** The IANA IPv4 special-purpose ranges a webhook must not reach (RFC 6890 and its registry: not globally reachable). */
const IPV4_REFUSED: readonly (readonly [string, number, string])[] = [
  ['0.0.0.0', 8, 'this-network'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'shared-address-space'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'ietf-protocol-assignments'],
  ['192.0.2.0', 24, 'documentation'],
  ['192.88.99.0', 24, '6to4-relay-anycast'],
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'benchmarking'],
  ['198.51.100.0', 24, 'documentation'],
  ['203.0.113.0', 24, 'documentation'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'],
];

/** IPv6 ranges refused outright, whatever they carry (the IANA IPv6 special-purpose registry, and what lies outside 2000::/3). */
const IPV6_REFUSED: readonly (readonly [string, number, string])[] = [
  ['::', 128, 'unspecified'],
  ['::1', 128, 'loopback'],
  // Deprecated (RFC 4291 §2.5.5.1): no stack routes it; judged by nothing but its range.
  ['::', 96, 'ipv4-compatible'],
  ['64:ff9b:1::', 48, 'nat64-local-use'],
  ['100::', 64, 'discard-only'],
  ['100:0:0:1::', 64, 'dummy-prefix'],
  // Teredo (2001::/32) and the rest of the IETF protocol assignments: benchmarking, ORCHID and
  // ORCHIDv2, AMT, AS112, the anycast service addresses. None is a place for a webhook.
  ['2001::', 32, 'teredo'],
  ['2001::', 23, 'ietf-protocol-assignments'],
  ['2001:db8::', 32, 'documentation'],
  // 6to4 (RFC 7526 deprecates its anycast relays): the way to the IPv4 address inside leads
  // through a relay the service does not control, so no 6to4 address is accepted, public or not.
  ['2002::', 16, '6to4'],
  ['3fff::', 20, 'documentation'],
  ['5f00::', 16, 'segment-routing'],
  ['fc00::', 7, 'unique-local'],
  ['fe80::', 10, 'link-local'],
  ['fec0::', 10, 'site-local'],
  ['ff00::', 8, 'multicast'],
];

export type AddressVerdict = {
  /** The address (or the IPv4 address it carries) is globally reachable: a webhook may go there. */
  allowed: boolean;
  /** Why not: the special-purpose range the address (or its embedded IPv4 address) lies in. */
  range?: string;
  /** The IPv4 address an IPv6 transition form carries (for Teredo, the client's). */
  embeddedIPv4?: string;
  /** The IPv6 transition form, when there is one. */
  form?: string;
};

function ipv4Number(address: string): number {
  return address.split('.').reduce((value, part) => value * 256 + Number(part), 0);
}

function ipv4Text(value: number): string {
  return [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255].join('.');
}

function classifyIPv4(address: string): AddressVerdict {
  const value = ipv4Number(address);
  for (const [network, prefix, range] of IPV4_REFUSED) {
    if (Math.floor(value / 2 ** (32 - prefix)) === Math.floor(ipv4Number(network) / 2 ** (32 - prefix))) return { allowed: false, range };
  }
  return { allowed: true };
}

/** An IPv6 address (as `isIP` accepts it: `::` shorthand, a dotted IPv4 tail, a zone) as a 128-bit number. */
function ipv6Number(address: string): bigint {
  let text = address.split('%')[0]!.toLowerCase();
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? (text.split('::') as [string, string]) : [text, undefined];
  const first = head === '' ? [] : head.split(':');
  const last = tail === undefined || tail === '' ? [] : tail.split(':');
  const words = [...first, ...Array<string>(tail === undefined ? 0 : 8 - first.length - last.length).fill('0'), ...last];
  return words.reduce((value, word) => (value << 16n) | BigInt(parseInt(word, 16)), 0n);
}

function inRange(value: bigint, network: string, prefix: number): boolean {
  const shift = BigInt(128 - prefix);
  return value >> shift === ipv6Number(network) >> shift;
}

/** The 32 bits at `shift` (from the right) as an IPv4 address. */
function bitsAsIPv4(value: bigint, shift: bigint): string {
  return ipv4Text(Number((value >> shift) & 0xffffffffn));
}

/** An IPv4 address carried by an IPv6 transition form, judged as what the network will reach. */
function judgedByIPv4(form: string, ipv4: string): AddressVerdict {
  const inner = classifyIPv4(ipv4);
  return inner.allowed ? { allowed: true, form, embeddedIPv4: ipv4 } : { allowed: false, range: inner.range, form, embeddedIPv4: ipv4 };
}

function classifyIPv6(address: string): AddressVerdict {
  const value = ipv6Number(address);
  // The forms a dual-stack host or a translator turns into the IPv4 address they carry.
  if (inRange(value, '::ffff:0:0', 96)) return judgedByIPv4('ipv4-mapped', bitsAsIPv4(value, 0n));
  if (inRange(value, '::ffff:0:0:0', 96)) return judgedByIPv4('ipv4-translated', bitsAsIPv4(value, 0n));
  if (inRange(value, '64:ff9b::', 96)) return judgedByIPv4('nat64', bitsAsIPv4(value, 0n));
  for (const [network, prefix, range] of IPV6_REFUSED) {
    if (!inRange(value, network, prefix)) continue;
    // Where a refused transition form carries an IPv4 address, say which (the caller's own input, decoded).
    if (range === 'ipv4-compatible') return { allowed: false, range, form: range, embeddedIPv4: bitsAsIPv4(value, 0n) };
    if (range === '6to4') return { allowed: false, range, form: range, embeddedIPv4: bitsAsIPv4(value, 80n) };
    // Teredo: the server's IPv4 address in bits 32–63, the client's in the last 32, inverted.
    if (range === 'teredo') return { allowed: false, range, form: range, embeddedIPv4: ipv4Text(Number(~value & 0xffffffffn)) };
    return { allowed: false, range };
  }
  // Global unicast is 2000::/3; everything else is reserved by the IETF.
  if (!inRange(value, '2000::', 3)) return { allowed: false, range: 'reserved' };
  // ISATAP interface identifiers (`0:5efe:a.b.c.d`, `200:5efe:a.b.c.d`, under any /64): the
  // site's ISATAP router delivers to the IPv4 address inside.
  const interfaceId = value & 0xffffffffffffffffn;
  if (((interfaceId >> 48n) & 0xfcffn) === 0n && ((interfaceId >> 32n) & 0xffffn) === 0x5efen) return judgedByIPv4('isatap', bitsAsIPv4(value, 0n));
  return { allowed: true };
}

/**
 * Whether a webhook may reach an IP address, and if not why. Used when a URL is saved (a literal
 * host) and when a delivery connects (every address its host name resolved to).
 */
export function classifyAddress(address: string): AddressVerdict {
  const family = isIP(address.split('%')[0]!);
  if (family === 4) return classifyIPv4(address);
  if (family === 6) return classifyIPv6(address);
  return { allowed: false, range: 'not-an-address' };
}

/** Whether an IP address is one a webhook must not reach (see `classifyAddress`). */
export function isNonPublicAddress(address: string): boolean {
  return !classifyAddress(address).allowed;
}

/** Names that never lead outside: this machine, mDNS, private DNS zones (RFC 6761, 6762, 8375). */
const REFUSED_NAME_SUFFIXES = ['localhost', 'localdomain', 'local', 'internal', 'home.arpa'];

/**
 * A URL's host as the network will use it: lower case (the URL parser already folds it), without
 * the trailing dots of a fully qualified name (`LOCALHOST.` is `localhost`), an IP literal
 * without its brackets. Numeric IPv4 spellings (`2130706433`, `0x7f.1`, `017700000001`) are
 * already dotted decimal: the URL parser reads them so for http and https, as clients do.
 */
function hostOf(url: URL): { name: string; ip: 0 | 4 | 6 } {
  const hostname = url.hostname.toLowerCase();
  const literal = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  const ip = isIP(literal) as 0 | 4 | 6;
  return { name: ip === 0 ? literal.replace(/\.+$/, '') : literal, ip };
}

/** A host that names a non-public address (an IP literal) or a name that never leads outside. */
function refusedHost(host: { name: string; ip: 0 | 4 | 6 }): AddressVerdict | undefined {
  if (host.ip !== 0) {
    const verdict = classifyAddress(host.name);
    return verdict.allowed ? undefined : verdict;
  }
  const suffix = REFUSED_NAME_SUFFIXES.find((refused) => host.name === refused || host.name.endsWith(`.${refused}`));
  if (suffix) return { allowed: false, range: `${suffix}-name` };
  // A single label is resolved through the machine's search domains: an inside name.
  return host.name.includes('.') ? undefined : { allowed: false, range: 'single-label-name' };
}

/**
 * Who a host is, for telling whether a URL names this service: an IP literal as its address (an
 * IPv4 address carried by an IPv6 form as that IPv4 address), a name without case or trailing
 * dots, and every spelling of this machine (`localhost`, `*.localhost`, 127.0.0.0/8, `::1`) alike.
 */
function identityOf(host: { name: string; ip: 0 | 4 | 6 }): string {
  if (host.ip === 0) return host.name === 'localhost' || host.name.endsWith('.localhost') ? 'loopback' : `name:${host.name}`;
  const verdict = classifyAddress(host.name);
  const ipv4 = host.ip === 4 ? host.name : verdict.form === 'ipv4-mapped' || verdict.form === 'ipv4-translated' || verdict.form === 'nat64' ? verdict.embeddedIPv4 : undefined;
  if (ipv4 !== undefined) return classifyIPv4(ipv4).range === 'loopback' ? 'loopback' : `ipv4:${ipv4}`;
  if (verdict.range === 'loopback') return 'loopback';
  return `ipv6:${ipv6Number(host.name).toString(16)}`;
}

function effectivePort(url: URL): string {
  return url.port || (url.protocol === 'https:' ? '443' : url.protocol === 'http:' ? '80' : '');
}

export type WebhookUrlPolicy = { allowPrivate: boolean; publicUrl: string };

/**
 * Checks a webhook URL by the rules above and answers it normalised (WHATWG serialisation).
 * https everywhere; http only to this machine (localhost, 127.0.0.1, [::1]), which is itself a
 * private address, so plain http works only with WEBHOOK_ALLOW_PRIVATE=true. This service's own
 * address (PUBLIC_URL's host and port, however spelled) is refused in any case.
 */
export function checkWebhookUrl(raw: string, policy: WebhookUrlPolicy): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new WebhookInvalidUrlError('not an absolute URL');
  }
  const scheme = url.protocol.replace(/:$/, '');
  const host = hostOf(url);
  // First, so that every spelling of this service is told as such, whatever else is wrong with it.
  const self = new URL(policy.publicUrl);
  if (identityOf(host) === identityOf(hostOf(self)) && effectivePort(url) === effectivePort(self)) {
    throw new WebhookAddressNotAllowedError(url.hostname, 'self');
  }
  const loopbackName = host.name === 'localhost' || host.name === '127.0.0.1' || host.name === '::1';
  if (scheme !== 'https' && !(scheme === 'http' && loopbackName)) throw new WebhookUnsupportedSchemeError(scheme);
  if (url.username !== '' || url.password !== '') throw new WebhookCredentialsInUrlError();
  if (url.hash !== '') throw new WebhookInvalidUrlError('it has a #fragment, which is never sent');
  // Port 0 names no service: no connection to it can succeed, so every delivery would fail.
  if (url.port === '0') throw new WebhookInvalidUrlError('port 0 cannot be connected to');
  if (url.href.length > 2000) throw new WebhookInvalidUrlError('longer than 2000 characters');
  if (!policy.allowPrivate) {
    const refused = refusedHost(host);
    if (refused) throw new WebhookAddressNotAllowedError(url.hostname, 'private', { range: refused.range, embeddedIPv4: refused.embeddedIPv4 });
  }
  return url.href;
}
