import { ConnectionException, DeadlockException, LockWaitTimeoutException, OptimisticLockError } from '@mikro-orm/core';
import { DomainError, InternalServerError, ServiceUnavailableError } from './errors.ts';
import type { Logger } from './logger.ts';

/** `Resource.Conflict`: a concurrent change won the race; retrying the request is safe. */
export class ConcurrentModificationError extends DomainError {
  constructor() {
    super('Resource.Conflict', 'The resource was changed by another request at the same time; retry the request.');
  }
}

function isConnectionFailure(error: unknown): boolean {
  if (error instanceof ConnectionException) return true;
  const message = error instanceof Error ? error.message : '';
  // pg-pool's acquire timeout and refused connections surface as plain errors.
  return /timeout exceeded when trying to connect|ECONNREFUSED|Connection terminated/i.test(message);
}

/**
 * Turns anything thrown below a face into a `DomainError` the face can show. Known domain
 * errors pass through; concurrency losses and an unreachable database get their own names; all
 * else is logged in full here and shown only as `Server.Internal`.
 */
export function normalizeError(error: unknown, log: Logger): DomainError {
  if (error instanceof DomainError) return error;
  if (error instanceof OptimisticLockError || error instanceof DeadlockException || error instanceof LockWaitTimeoutException) {
    return new ConcurrentModificationError();
  }
  if (isConnectionFailure(error)) {
    log.error({ err: error }, 'database unavailable');
    return new ServiceUnavailableError();
  }
  log.error({ err: error }, 'unexpected error');
  return new InternalServerError();
}
