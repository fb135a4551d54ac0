import { DomainError } from '../../shared/errors.ts';

/** `Webhook.NotFound` (404): no webhook endpoint with this id exists for your team (unknown, malformed and other teams' ids alike). */
export class WebhookNotFoundError extends DomainError {
  constructor(webhookId: string) {
    super('Webhook.NotFound', 'No webhook endpoint with this id exists for your team.', { webhookId });
  }
}

/** `WebhookDelivery.NotFound` (404): no delivery with this id exists for this endpoint of your team. */
export class WebhookDeliveryNotFoundError extends DomainError {
  constructor(deliveryId: string) {
    super('WebhookDelivery.NotFound', 'No delivery with this id exists for this webhook endpoint of your team.', { deliveryId });
  }
}

/** `Webhook.InvalidUrl` (400): the URL is not an absolute URL (or is longer than 2000 characters, has a fragment, or names port 0). */
export class WebhookInvalidUrlError extends DomainError {
  constructor(reason: string) {
    super('Webhook.InvalidUrl', `The webhook URL is not usable: ${reason}.`, { path: 'url', reason });
  }
}

/** `Webhook.UnsupportedScheme` (400): only https URLs are accepted (http only to localhost, 127.0.0.1 or [::1]). */
export class WebhookUnsupportedSchemeError extends DomainError {
  constructor(scheme: string) {
    super('Webhook.UnsupportedScheme', 'Webhook URLs must use https (http only for localhost, 127.0.0.1 or [::1]).', { path: 'url', scheme });
  }
}

/** `Webhook.CredentialsInUrl` (400): the URL carries a user name or password; verify the signature header instead. */
export class WebhookCredentialsInUrlError extends DomainError {
  constructor() {
    super('Webhook.CredentialsInUrl', 'Webhook URLs must not carry a user name or password; verify the X-Envelope-Signature header instead.', { path: 'url' });
  }
}

/**
 * `Webhook.AddressNotAllowed` (400): the URL names a loopback, private, link-local or otherwise
 * non-public address, also inside an IPv6 transition form, or a name that never leads outside
 * (allowed only with WEBHOOK_ALLOW_PRIVATE=true), or this service itself. `context.range` names
 * the special-purpose range (`loopback`, `private`, `link-local`, `6to4`, `teredo`, …) and
 * `context.embeddedIPv4` the IPv4 address an IPv6 form carries.
 */
export class WebhookAddressNotAllowedError extends DomainError {
  constructor(host: string, reason: 'private' | 'self', detail: { range?: string; embeddedIPv4?: string } = {}) {
    super(
      'Webhook.AddressNotAllowed',
      reason === 'self'
        ? 'Webhook URLs must not point at this service itself.'
        : 'Webhook URLs must name a public address; loopback, private, link-local and other special-purpose addresses (also inside IPv6 forms such as ::ffff:, 64:ff9b::, 6to4 and Teredo) are refused unless the operator sets WEBHOOK_ALLOW_PRIVATE=true.',
      {
        path: 'url',
        host,
        reason,
        ...(detail.range === undefined ? {} : { range: detail.range }),
        ...(detail.embeddedIPv4 === undefined ? {} : { embeddedIPv4: detail.embeddedIPv4 }),
      },
    );
  }
}

/** `Webhook.UnknownEventType` (400): `eventTypes` names types that are not audit event types; `context.eventTypes` lists them. */
export class WebhookUnknownEventTypeError extends DomainError {
  constructor(eventTypes: string[]) {
    super('Webhook.UnknownEventType', `Unknown event types: ${eventTypes.join(', ')}. Use the audit event types listed in the README.`, {
      path: 'eventTypes',
      eventTypes,
    });
  }
}

/** `Webhook.Disabled` (409): a redelivery to a disabled endpoint; enable it first (update with enabled: true). */
export class WebhookDisabledError extends DomainError {
  constructor(webhookId: string) {
    super('Webhook.Disabled', 'This webhook endpoint is disabled; enable it before redelivering.', { webhookId });
  }
}

/** `Webhook.CapacityExceeded` (422): a team has at most this many webhook endpoints. */
export class WebhookCapacityExceededError extends DomainError {
  constructor(limit: number) {
    super('Webhook.CapacityExceeded', `A team may have at most ${limit} webhook endpoints; delete one first.`, { limit });
  }
}
