import { LockWaitTimeoutException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { ServiceContext } from '../service-context.ts';
import { EnvelopeBusyError } from './envelope.errors.ts';

/**
 * The envelope's row lock, taken fairly. Every change that locks an envelope's row (a draft
 * edit, sending, a signer's action, voiding) runs in `inEnvelopeTransaction`, which keeps one
 * envelope's (or one team's) burst of changes from taking the database pool.
 *
 * A change holds a pooled connection from its BEGIN to its COMMIT, including the time it
 * waits for the envelope's row lock. Fifty uploads to one envelope would otherwise take every
 * connection just to queue on one row, and everyone else's reads would queue behind them for a
 * connection. So, in this process, a change first waits here, holding nothing: at most one
 * change per envelope (the lock serialises them anyway), and at most half the pool per team,
 * are inside a transaction at a time. Waits are bounded; a wait that runs out is the caller's
 * named, retryable `Envelope.Busy`. Other processes sharing the database are bounded by the
 * transaction's `lock_timeout` instead.
 */

type Waiter = { grant: () => void };

/** A first-come first-served counting semaphore. */
class Slots {
  private active = 0;
  private readonly waiting: Waiter[] = [];
  readonly capacity: number;
  constructor(capacity: number) {
    this.capacity = capacity;
  }

  get idle(): boolean {
    return this.active === 0 && this.waiting.length === 0;
  }

  /** Resolves with a release function once a slot is free, or with undefined at the deadline. */
  take(deadline: number): Promise<(() => void) | undefined> {
    if (this.active < this.capacity && this.waiting.length === 0) {
      this.active += 1;
      return Promise.resolve(this.releaser());
    }
    return new Promise((resolve) => {
      const waiter: Waiter = {
        grant: () => {
          clearTimeout(timer);
          resolve(this.releaser());
        },
      };
      const timer = setTimeout(
        () => {
          const index = this.waiting.indexOf(waiter);
          if (index >= 0) this.waiting.splice(index, 1);
          resolve(undefined);
        },
        Math.max(0, deadline - Date.now()),
      );
      this.waiting.push(waiter);
    });
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      if (next) next.grant();
      else this.active -= 1;
    };
  }
}

export class EnvelopeLockQueue {
  private readonly envelopes = new Map<string, Slots>();
  private readonly teams = new Map<string, Slots>();
  private readonly perTeam: number;
  constructor(options: { perTeam: number }) {
    this.perTeam = options.perTeam;
  }

  /**
   * Waits (up to `waitMs`) for this envelope's turn and a slot of its team. Resolves with the
   * function that lets the next one in, or undefined when the wait ran out.
   */
  async enter(teamId: string, envelopeId: string, waitMs: number): Promise<(() => void) | undefined> {
    const deadline = Date.now() + waitMs;
    // The envelope's turn first: changes waiting for a busy envelope must not hold team slots.
    const envelopeSlots = this.slotsOf(this.envelopes, envelopeId.toLowerCase(), 1);
    const leaveEnvelope = await envelopeSlots.take(deadline);
    if (!leaveEnvelope) {
      this.forgetIdle(this.envelopes, envelopeId.toLowerCase());
      return undefined;
    }
    const teamSlots = this.slotsOf(this.teams, teamId, this.perTeam);
    const leaveTeam = await teamSlots.take(deadline);
    if (!leaveTeam) {
      leaveEnvelope();
      this.forgetIdle(this.envelopes, envelopeId.toLowerCase());
      this.forgetIdle(this.teams, teamId);
      return undefined;
    }
    return () => {
      leaveTeam();
      leaveEnvelope();
      this.forgetIdle(this.teams, teamId);
      this.forgetIdle(this.envelopes, envelopeId.toLowerCase());
    };
  }

  private slotsOf(map: Map<string, Slots>, key: string, capacity: number): Slots {
    let slots = map.get(key);
    if (!slots) {
      slots = new Slots(capacity);
      map.set(key, slots);
    }
    return slots;
  }

  private forgetIdle(map: Map<string, Slots>, key: string) {
    if (map.get(key)?.idle) map.delete(key);
  }
}

/** One queue per connection pool (per ORM configuration object), made on first use. */
const queues = new WeakMap<object, EnvelopeLockQueue>();

function lockQueueFor(poolOwner: object, poolMax: number): EnvelopeLockQueue {
  let queue = queues.get(poolOwner);
  if (!queue) {
    queue = new EnvelopeLockQueue({ perTeam: Math.max(1, Math.floor(poolMax / 2)) });
    queues.set(poolOwner, queue);
  }
  return queue;
}

/**
 * How long a change may wait for its turn in this process, and then, inside its transaction, for
 * the envelope's row lock (`lock_timeout`, against other processes). Either running out is
 * `Envelope.Busy` (409, Retry-After).
 */
export const ENVELOPE_LOCK_TIMEOUT_MS = 5_000;
const BUSY_RETRY_AFTER_SECONDS = 1;

/** PostgreSQL's lock_not_available (55P03): `lock_timeout` ran out. */
function isLockTimeout(error: unknown): boolean {
  for (let current = error, depth = 0; current && depth < 5; current = (current as { cause?: unknown }).cause, depth += 1) {
    if (current instanceof LockWaitTimeoutException || (current as { code?: unknown }).code === '55P03') return true;
  }
  return false;
}

/**
 * Runs `work` in a transaction that will take the envelope's row lock, fairly: after its turn in
 * this queue (holding no connection while it waits) and with the lock wait bounded. Signers of
 * one envelope finishing at once queue here one at a time instead of each holding a pooled
 * connection while waiting for the row. Staging (an upload's bytes, its PDF inspection) happens
 * before this, never inside it.
 */
export async function inEnvelopeTransaction<T>(context: Pick<ServiceContext, 'em'>, teamId: string, envelopeId: string, work: (em: EntityManager) => Promise<T>): Promise<T> {
  const poolMax = (context.em.config.get('pool') as { max?: number } | undefined)?.max ?? 10;
  const leave = await lockQueueFor(context.em.config, poolMax).enter(teamId, envelopeId, ENVELOPE_LOCK_TIMEOUT_MS);
  if (!leave) throw new EnvelopeBusyError(envelopeId, BUSY_RETRY_AFTER_SECONDS);
  try {
    return await context.em.transactional(async (em) => {
      await em.execute(`set local lock_timeout = ${ENVELOPE_LOCK_TIMEOUT_MS}`);
      return work(em);
    });
  } catch (error) {
    if (isLockTimeout(error)) throw new EnvelopeBusyError(envelopeId, BUSY_RETRY_AFTER_SECONDS);
    throw error;
  } finally {
    leave();
  }
}
