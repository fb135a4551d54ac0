/**
 * Keeps one envelope's (or one team's) burst of draft changes from taking the database pool.
 *
 * A draft change holds a pooled connection from its BEGIN to its COMMIT, including the time it
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
      const timer = setTimeout(() => {
        const index = this.waiting.indexOf(waiter);
        if (index >= 0) this.waiting.splice(index, 1);
        resolve(undefined);
      }, Math.max(0, deadline - Date.now()));
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

export class DraftGate {
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

/** One gate per connection pool (per ORM configuration object), made on first use. */
const gates = new WeakMap<object, DraftGate>();

export function draftGateFor(poolOwner: object, poolMax: number): DraftGate {
  let gate = gates.get(poolOwner);
  if (!gate) {
    gate = new DraftGate({ perTeam: Math.max(1, Math.floor(poolMax / 2)) });
    gates.set(poolOwner, gate);
  }
  return gate;
}
