import type { DomainError } from '../../shared/errors.ts';
import { SubscriptionInterruptedError, SubscriptionKeyRevokedError, SubscriptionLimitError, SubscriptionUnavailableError } from '../live/live.errors.ts';
import type { LiveContext } from '../live/live.service.ts';
import { type BulkSendData, readBulkSend } from './bulk-send.read.ts';

/** What `bulkSendProgress` yields: the bulk send as it is now, or, last of all, the error it ended with. */
export type BulkSendProgressItem = BulkSendData | { ended: DomainError };

/** At most this often a progress is read again while the team's envelopes change (each row's send is a burst of events). */
const COALESCE_MS = 250;
/** Read again at least this often: a row that fails, a cancel or the completion has no envelope event of its own. */
const POLL_MS = 2_000;

function sameProgress(a: BulkSendData, b: BulkSendData): boolean {
  return a.status === b.status && a.created === b.created && a.sent === b.sent && a.failed === b.failed;
}

/**
 * `bulkSendProgress`: the bulk send now, then each time its counters or status change, until it
 * is completed or cancelled (that answer comes last, then the subscription completes). Woken by
 * the live hub when one of the team's envelopes changes (each row's envelope is created and sent)
 * and at least every 2 s, it reads the bulk send's one row again: however many watchers, a change
 * costs each one read, never a replay. Counted against the key's subscriptions like any other;
 * ends with the key's revocation or an interruption of the event feed, as the others do.
 */
export async function subscribeBulkSendProgress(context: LiveContext, options: { bulkSendId: string }): Promise<AsyncIterable<BulkSendProgressItem>> {
  const caller = await context.caller();
  const hub = context.envelopeEvents;
  if (!hub.available) throw new SubscriptionUnavailableError();
  const connection = context.liveConnection;
  if (connection && connection.open >= hub.limits.perConnection) throw new SubscriptionLimitError('connection', hub.limits.perConnection);
  let current = await readBulkSend(context, options.bulkSendId);
  const release = hub.open(caller.apiKeyId);
  if (connection) connection.open += 1;
  let wake: (() => void) | undefined;
  let dirty = false;
  let ended: DomainError | undefined;
  const poke = () => {
    dirty = true;
    wake?.();
  };
  const cleanups = [
    hub.watchTeam(caller.teamId, poke),
    hub.watchRevocation(caller.apiKeyId, () => {
      ended ??= new SubscriptionKeyRevokedError();
      poke();
    }),
    hub.watchInterruption((reason) => {
      ended ??= new SubscriptionInterruptedError(reason, null);
      poke();
    }),
  ];
  let released = false;
  const finish = () => {
    if (released) return;
    released = true;
    for (const cleanup of cleanups.splice(0)) cleanup();
    if (connection) connection.open -= 1;
    release();
  };
  const finished = (progress: BulkSendData) => progress.status === 'completed' || progress.status === 'cancelled';

  async function* stream(): AsyncGenerator<BulkSendProgressItem> {
    try {
      yield current;
      while (!finished(current)) {
        if (!dirty) {
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, POLL_MS);
            timer.unref();
            wake = () => {
              clearTimeout(timer);
              resolve();
            };
          });
          wake = undefined;
        }
        if (ended) {
          yield { ended };
          return;
        }
        // A burst of events (a row's creation and send) is read once.
        await new Promise((resolve) => setTimeout(resolve, COALESCE_MS).unref());
        dirty = false;
        const next = await readBulkSend(context, options.bulkSendId);
        if (!sameProgress(next, current)) {
          current = next;
          yield current;
        }
      }
    } finally {
      finish();
    }
  }
  // A generator closed before its first read never runs its `finally`: release here too.
  const iterator = stream();
  return {
    [Symbol.asyncIterator]() {
      return this;
    },
    next: () => iterator.next(),
    async return() {
      const result = await iterator.return(undefined);
      finish();
      return result;
    },
  } as AsyncIterableIterator<BulkSendProgressItem>;
}
