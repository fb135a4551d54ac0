import { DEFAULT_RETRY_AFTER_SECONDS, DomainError } from '../../shared/errors.ts';

/**
 * `Subscription.TooMany`: the key (or the WebSocket connection) already holds as many open
 * subscriptions as allowed; `context.scope` is `apiKey`, `signingLink` or `connection`, `context.limit` the
 * number. Nothing was subscribed. Close one first.
 */
export class SubscriptionLimitError extends DomainError {
  constructor(scope: 'apiKey' | 'signingLink' | 'connection', limit: number) {
    super(
      'Subscription.TooMany',
      scope === 'connection'
        ? `This connection already holds ${limit} open subscriptions, the most allowed; close one or open another connection.`
        : `This ${scope === 'apiKey' ? 'API key' : 'signing link'} already holds ${limit} open subscriptions, the most allowed; close one first.`,
      { scope, limit },
    );
  }
}

/**
 * `Subscription.KeyRevoked`: the API key the subscription was opened with was revoked; the
 * subscription ends with this error and sends nothing more.
 */
export class SubscriptionKeyRevokedError extends DomainError {
  constructor() {
    super('Subscription.KeyRevoked', 'The API key of this subscription was revoked; the subscription has ended.');
  }
}

/**
 * `Subscription.Interrupted`: the subscription ended because events could not be followed any
 * more: the reader fell too far behind (`context.reason` `slow_reader`) or this instance lost its
 * event connection to the database (`connection_lost`). `context.lastSequence` is the last
 * sequence delivered (envelopeEvents): subscribe again with `afterSequence` to resume without loss.
 */
export class SubscriptionInterruptedError extends DomainError {
  constructor(reason: 'slow_reader' | 'connection_lost' | 'shutting_down', lastSequence: number | null) {
    super('Subscription.Interrupted', 'The subscription ended before its events could all be delivered; subscribe again (with afterSequence for envelopeEvents) to resume.', {
      reason,
      lastSequence,
    });
  }
}

/** `Subscription.Unavailable` (503): this instance is not receiving events right now (its database event connection is down); retry shortly. */
export class SubscriptionUnavailableError extends DomainError {
  constructor() {
    super('Subscription.Unavailable', 'Live events are unavailable on this instance right now; retry in a few seconds.', { retryAfterSeconds: DEFAULT_RETRY_AFTER_SECONDS });
  }
}
