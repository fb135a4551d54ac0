import { z } from 'zod';
import type { DomainError } from '../../shared/errors.ts';
import { isClosedEnvelopeStatus } from '../envelope/envelope.entity.ts';
import type { ServiceContext } from '../service-context.ts';
import { lookUpToken } from '../signing/signing.service.ts';
import { boundedInteger, parseInput } from '../validation.ts';
import { REPLAY_PAGE, readEnvelopeEventsAfter, readEnvelopeStatus } from './envelope-event.read.ts';
import { type EnvelopeEvent, setsStatus } from './envelope-event.ts';
import type { EnvelopeEventHub } from './envelope-event-hub.ts';
import { SubscriptionInterruptedError, SubscriptionKeyRevokedError, SubscriptionLimitError, SubscriptionUnavailableError } from './live.errors.ts';

/** What a subscription yields: an event, or, last of all, the error it ended with. */
export type LiveItem = EnvelopeEvent | { ended: DomainError };

/** One transport connection (a WebSocket, or one SSE request), for the per-connection limit. */
export type LiveConnection = { open: number };

export type LiveContext = ServiceContext & { envelopeEvents: EnvelopeEventHub; liveConnection?: LiveConnection };

/**
 * A subscriber's queue, read by the transport at its own pace. Bounded: a reader that lets
 * `maxQueued` events pile up is dropped with `Subscription.Interrupted` (`slow_reader`, and the
 * last sequence it was given), so one slow client cannot grow memory without end; it resumes by
 * sequence. Everything it holds is released on return (the client went away) or on ending.
 */
class LiveStream implements AsyncIterableIterator<LiveItem> {
  #queue: LiveItem[] = [];
  #head = 0;
  #waiting: ((result: IteratorResult<LiveItem>) => void) | undefined;
  #finished = false;
  #cleanups: (() => void)[] = [];
  /** The last sequence handed to the reader (envelopeEvents), for resuming after an interruption. */
  lastDelivered: number | null = null;

  readonly maxQueued: number;

  constructor(maxQueued: number) {
    this.maxQueued = maxQueued;
  }

  onEnd(cleanup: () => void): void {
    if (this.#finished) cleanup();
    else this.#cleanups.push(cleanup);
  }

  get finished(): boolean {
    return this.#finished;
  }

  /**
   * Queues an event for the reader. `live`: it came from the hub, and counts against the bound;
   * events read back from the table do not (their pages are bounded, and the next page waits for
   * room, see `room()`).
   */
  push(item: EnvelopeEvent, live = true): void {
    if (this.#finished) return;
    if (this.#waiting) {
      const resolve = this.#waiting;
      this.#waiting = undefined;
      this.lastDelivered = item.sequence;
      resolve({ value: item, done: false });
      return;
    }
    this.#queue.push(item);
    if (live && this.#queue.length - this.#head > this.maxQueued) this.end(new SubscriptionInterruptedError('slow_reader', this.lastDelivered));
    else this.#roomCheck?.();
  }

  #roomCheck: (() => void) | undefined;

  /** Resolves once the reader has taken all but a few queued events (or the stream ended). */
  room(): Promise<void> {
    return new Promise((resolve) => {
      const check = () => {
        if (this.#finished || this.#queue.length - this.#head <= 1) {
          this.#roomCheck = undefined;
          resolve();
        }
      };
      this.#roomCheck = check;
      check();
    });
  }

  /** Ends normally once the reader has taken what is queued. */
  complete(): void {
    if (this.#finished) return;
    this.#release();
    const waiting = this.#waiting;
    this.#waiting = undefined;
    waiting?.({ value: undefined, done: true });
  }

  /** Ends with an error, delivered after nothing else (what was queued is dropped: the reader resumes by sequence). */
  end(error: DomainError): void {
    if (this.#finished) return;
    this.#queue = [{ ended: error }];
    this.#head = 0;
    this.#release();
    if (this.#waiting) {
      const resolve = this.#waiting;
      this.#waiting = undefined;
      this.#queue = [];
      resolve({ value: { ended: error }, done: false });
    }
  }

  #release() {
    this.#finished = true;
    this.#roomCheck?.();
    const cleanups = this.#cleanups;
    this.#cleanups = [];
    for (const cleanup of cleanups) cleanup();
  }

  next(): Promise<IteratorResult<LiveItem>> {
    if (this.#head < this.#queue.length) {
      const value = this.#queue[this.#head];
      this.#head += 1;
      if (this.#head > 64 && this.#head * 2 > this.#queue.length) {
        this.#queue = this.#queue.slice(this.#head);
        this.#head = 0;
      }
      if ('sequence' in value) this.lastDelivered = value.sequence;
      this.#roomCheck?.();
      return Promise.resolve({ value, done: false });
    }
    if (this.#finished) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => {
      this.#waiting = resolve;
    });
  }

  return(): Promise<IteratorResult<LiveItem>> {
    this.#queue = [];
    this.#head = 0;
    if (!this.#finished) this.#release();
    const waiting = this.#waiting;
    this.#waiting = undefined;
    waiting?.({ value: undefined, done: true });
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator]() {
    return this;
  }
}

/**
 * Opens a stream for the caller: checks the limits (per key in the hub, per connection here) and
 * that events are arriving, and ends it when the key is revoked or events stop arriving.
 */
function openStream(context: LiveContext, apiKeyId: string, scope: 'apiKey' | 'signingLink' = 'apiKey'): LiveStream {
  // (For a signing link, `apiKeyId` is the link's own key in the count: `signing:<token id>`.)
  const hub = context.envelopeEvents;
  if (!hub.available) throw new SubscriptionUnavailableError();
  const connection = context.liveConnection;
  if (connection && connection.open >= hub.limits.perConnection) throw new SubscriptionLimitError('connection', hub.limits.perConnection);
  const release = hub.open(apiKeyId, scope);
  const stream = new LiveStream(hub.limits.maxQueuedEvents);
  stream.onEnd(release);
  if (connection) {
    connection.open += 1;
    stream.onEnd(() => {
      connection.open -= 1;
    });
  }
  stream.onEnd(hub.watchRevocation(apiKeyId, () => stream.end(new SubscriptionKeyRevokedError())));
  stream.onEnd(hub.watchInterruption((reason) => stream.end(new SubscriptionInterruptedError(reason, stream.lastDelivered))));
  return stream;
}

const afterSequenceInput = z.strictObject({ afterSequence: boundedInteger(0, 2_147_483_647).nullish() });

/**
 * `envelopeEvents`: every audit event of one of the team's envelopes, as appended. With
 * `afterSequence`, first what was appended after it (from the audit table), then live events,
 * with nothing lost and nothing twice across the seam: the watcher is registered before the
 * table is read, live events are held until the read is done, and then only the next sequence
 * is let through (an older one is a duplicate and dropped; a newer one means events in between
 * have not been seen, and they are read from the table first).
 */
export async function subscribeEnvelopeEvents(context: LiveContext, options: { envelopeId: string; afterSequence?: number | null }): Promise<AsyncIterable<LiveItem>> {
  const { afterSequence } = parseInput(afterSequenceInput, { afterSequence: options.afterSequence });
  const caller = await context.caller();
  const { envelopeId } = options;
  // Where the stream starts: after the given sequence, or after the trail's head as read before the
  // watcher is registered. Read after it, the head could already include a change committed once
  // the subscription was in place, and that change would be taken for history and never sent; read
  // before, such a change is after the start and the catch-up below reads it from the table.
  let from: number;
  if (afterSequence === null || afterSequence === undefined) {
    from = (await readEnvelopeEventsAfter(context.reader, caller.teamId, envelopeId, null)).head;
  } else {
    from = afterSequence;
  }
  const stream = openStream(context, caller.apiKeyId);
  // null while catching up; then the last sequence passed on.
  let last: number | null = null;
  let held: EnvelopeEvent[] = [];
  let catchingUp = true;

  function pass(event: EnvelopeEvent, live = true) {
    last = event.sequence;
    stream.push(event, live);
  }

  async function catchUp(from: number) {
    let after = from;
    for (;;) {
      const page = await readEnvelopeEventsAfter(context.reader, caller.teamId, envelopeId, after);
      for (const event of page.events) pass(event, false);
      if (page.events.length < REPLAY_PAGE || stream.finished) return;
      after = page.events[page.events.length - 1].sequence;
      // The next page once the reader has taken this one: a long backlog never sits in memory whole.
      await stream.room();
    }
  }

  /** Lets held events through in order, reading any gap from the table first. */
  async function drain() {
    while (held.length > 0 && !stream.finished) {
      held.sort((a, b) => a.sequence - b.sequence);
      const next = held[0];
      if (last !== null && next.sequence <= last) {
        held.shift();
        continue;
      }
      if (last === null || next.sequence === last + 1) {
        held.shift();
        pass(next);
        continue;
      }
      const before: number = last;
      await catchUp(before);
      // The NOTIFY of a sequence comes after its predecessors committed, so the table has them;
      // if it did not, the seam could not be kept: end, and let the client resume by sequence.
      if (last === before) stream.end(new SubscriptionInterruptedError('connection_lost', stream.lastDelivered));
    }
  }

  function settle(work: Promise<void>) {
    work
      .then(() => {
        catchingUp = false;
        if (held.length > 0) {
          catchingUp = true;
          settle(drain());
        }
      })
      .catch(() => stream.end(new SubscriptionInterruptedError('connection_lost', stream.lastDelivered)));
  }

  stream.onEnd(
    context.envelopeEvents.watchEnvelope(envelopeId, (event) => {
      if (event.teamId !== caller.teamId) return;
      if (catchingUp) {
        held.push(event);
        // Held while the backlog is read: bounded like the queue, or a slow catch-up could grow without end.
        if (held.length > context.envelopeEvents.limits.maxQueuedEvents) stream.end(new SubscriptionInterruptedError('slow_reader', stream.lastDelivered));
        return;
      }
      if (last !== null && event.sequence <= last) return;
      if (last !== null && event.sequence === last + 1) {
        pass(event);
        return;
      }
      held.push(event);
      catchingUp = true;
      settle(drain());
    }),
  );
  stream.onEnd(() => {
    held = [];
  });

  try {
    last = from;
    await catchUp(from);
  } catch (error) {
    await stream.return();
    throw error;
  }
  settle(drain());
  return stream;
}

/**
 * `envelopeStatusChanged`: the status changes of one of the team's envelopes, or of all of them
 * (no id), from now on. A foreign or unknown id is `Envelope.NotFound`, as everywhere.
 */
export async function subscribeEnvelopeStatusChanged(context: LiveContext, options: { envelopeId?: string | null }): Promise<AsyncIterable<LiveItem>> {
  const caller = await context.caller();
  const stream = openStream(context, caller.apiKeyId);
  const listener = (event: EnvelopeEvent) => {
    if (event.teamId === caller.teamId && setsStatus(event.type)) stream.push(event);
  };
  try {
    if (options.envelopeId === null || options.envelopeId === undefined) {
      stream.onEnd(context.envelopeEvents.watchTeam(caller.teamId, listener));
    } else {
      stream.onEnd(context.envelopeEvents.watchEnvelope(options.envelopeId, listener));
      await readEnvelopeStatus(context.reader, caller.teamId, options.envelopeId);
    }
  } catch (error) {
    await stream.return();
    throw error;
  }
  return stream;
}

/**
 * `signingSessionChanged`: a signing page (its `X-Signing-Token`, no team key) watches its own
 * envelope's status and turns from now on: `recipient.activated` (someone's turn came, so a page
 * waiting for its turn looks again), `envelope.corrected` (the sender corrected it: the page
 * reloads the new revision), and the envelope closing (finalized, voided, expired), and
 * then the subscription completes, as the link is dead from then on. A missing, unknown or dead
 * link, or a closed envelope, is refused as `signingSession` refuses it.
 */
export async function subscribeSigningSessionChanged(context: LiveContext): Promise<AsyncIterable<LiveItem>> {
  const link = await lookUpToken(context);
  const stream = openStream(context, `signing:${link.id}`, 'signingLink');
  stream.onEnd(
    context.envelopeEvents.watchEnvelope(link.envelope_id, (event) => {
      // Besides status changes, turns: a recipient activated (the page waiting for its turn looks
      // again), and corrections (the page reloads the new revision, keeping what was typed).
      if (event.teamId !== link.team_id || !(setsStatus(event.type) || event.type === 'recipient.activated' || event.type === 'envelope.corrected')) return;
      stream.push(event);
      if (event.status !== null && isClosedEnvelopeStatus(event.status)) stream.complete();
    }),
  );
  return stream;
}
