import { BlockList, isIP } from 'node:net';
import {
  WebhookAddressNotAllowedError,
  WebhookCredentialsInUrlError,
  WebhookInvalidUrlError,
  WebhookUnsupportedSchemeError,
} from './webhook.errors.ts';

/*
 * Where a webhook may point. The service calls these URLs from its own network (SSRF), so a URL
 * naming a loopback, private, link-local or otherwise non-public address is refused when it is
 * saved, and every address a host name resolves to is checked again when a delivery connects
 * (delivery.ts), so a name that resolves (or later re-resolves) to an inside address is refused
 * too. WEBHOOK_ALLOW_PRIVATE=true lifts both checks for development and tests.
 */

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]']);

const blocked = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  blocked.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const) {
  blocked.addSubnet(network, prefix, 'ipv6');
}

/** Whether an IP address is one a webhook must not reach (loopback, private, link-local, multicast, reserved). */
export function isNonPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return blocked.check(address, 'ipv4');
  if (family === 6) {
    // An IPv4-mapped IPv6 address (::ffff:10.0.0.1) is the IPv4 address.
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
    if (mapped) return blocked.check(mapped[1], 'ipv4');
    return blocked.check(address, 'ipv6');
  }
  return true;
}

export type WebhookUrlPolicy = { allowPrivate: boolean; publicUrl: string };

/**
 * Checks a webhook URL by the rules above and answers it normalised (WHATWG serialisation).
 * https everywhere; http only to this machine (localhost, 127.0.0.1, [::1]), which is itself a
 * private address, so plain http works only with WEBHOOK_ALLOW_PRIVATE=true.
 */
export function checkWebhookUrl(raw: string, policy: WebhookUrlPolicy): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new WebhookInvalidUrlError('not an absolute URL');
  }
  const scheme = url.protocol.replace(/:$/, '');
  const host = url.hostname.toLowerCase();
  if (scheme !== 'https' && !(scheme === 'http' && LOOPBACK_NAMES.has(host))) throw new WebhookUnsupportedSchemeError(scheme);
  if (url.username !== '' || url.password !== '') throw new WebhookCredentialsInUrlError();
  if (url.hash !== '') throw new WebhookInvalidUrlError('it has a #fragment, which is never sent');
  if (url.href.length > 2000) throw new WebhookInvalidUrlError('longer than 2000 characters');
  if (url.origin === new URL(policy.publicUrl).origin) throw new WebhookAddressNotAllowedError(host, 'self');
  if (!policy.allowPrivate) {
    const literal = host.startsWith('[') ? host.slice(1, -1) : host;
    const nonPublic =
      isIP(literal) !== 0 ? isNonPublicAddress(literal) : host === 'localhost' || host.endsWith('.localhost') || host.endsWith('.local') || host.endsWith('.internal') || !host.includes('.');
    if (nonPublic) throw new WebhookAddressNotAllowedError(host, 'private');
  }
  return url.href;
}
