import { IsolationLevel } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';

/*
 * A dry run (send, jumpstart) does the real operation's work and keeps none of it: its
 * transaction always rolls back, so whatever the work wrote, flushed or queued in the outbox
 * (which is written in the same transaction) is gone. The answer leaves through the sentinel.
 */

class RollBack<T> extends Error {
  readonly answer: T;
  constructor(answer: T) {
    super('dry run rolled back');
    this.answer = answer;
  }
}

/**
 * Runs `work` in a transaction that is rolled back whatever happens, and answers what `work`
 * answered (its errors propagate unchanged). Repeatable read: every query of the dry run sees
 * the same snapshot, without taking any lock, so a dry run never waits for or blocks a change.
 */
export async function inRolledBackTransaction<T>(em: EntityManager, work: (em: EntityManager) => Promise<T>): Promise<T> {
  try {
    await em.transactional(
      async (tx) => {
        throw new RollBack(await work(tx));
      },
      { isolationLevel: IsolationLevel.REPEATABLE_READ },
    );
  } catch (error) {
    if (error instanceof RollBack) return error.answer as T;
    throw error;
  }
  throw new Error('unreachable: a dry run always rolls back');
}
