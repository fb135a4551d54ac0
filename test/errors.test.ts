import { GraphQLError } from 'graphql';
import { describe, expect, it } from 'vitest';
import { SubscriptionUnavailableError } from '../src/domain/live/live.errors.ts';
import { createErrorMask } from '../src/graphql/errors.ts';
import { errorAnswer, errorResponse } from '../src/http/contract-body.ts';
import {
  DomainError,
  errorNamesWithStatus,
  httpStatusForError,
  InvalidRequestError,
  ServerBusyError,
  ServiceUnavailableError,
  StorageObjectMissingError,
  StorageUnavailableError,
} from '../src/shared/errors.ts';
import { createLogger } from '../src/shared/logger.ts';
import { normalizeError } from '../src/shared/normalize-error.ts';

const silent = createLogger('silent');

describe('the error model', () => {
  it.each([
    ['Request.Invalid', 400],
    ['Auth.MissingApiKey', 401],
    ['Auth.InvalidApiKey', 401],
    ['Envelope.NotFound', 404],
    ['Template.NotFound', 404],
    ['Envelope.NotDraft', 409],
    ['Envelope.Closed', 409],
    ['Envelope.NotDeletable', 409],
    ['Recipient.HostRecipientBound', 409],
    ['Recipient.DelegatorRecipientBound', 409],
    ['Request.IdempotencyKeyReused', 409],
    ['Document.TooLarge', 413],
    ['Document.NotPdf', 415],
    ['Document.InvalidPdf', 422],
    ['Document.Encrypted', 422],
    ['Document.TooComplex', 422],
    ['Request.RateLimited', 429],
    ['Server.Internal', 500],
  ])('maps %s to HTTP %i', (name, status) => {
    expect(httpStatusForError(name)).toBe(status);
  });

  it('never leaks an unexpected error: REST shows Server.Internal with a request id only', async () => {
    const leaked = new Error('password=hunter2 at db.internal:5432');
    const response = errorResponse(normalizeError(leaked, silent), { requestId: 'req-1', alwaysHttp200: false });
    expect(response.status).toBe(500);
    const text = await response.text();
    expect(text).not.toContain('hunter2');
    expect(JSON.parse(text)).toEqual({
      version: '1',
      success: false,
      error: { name: 'Server.Internal', description: expect.any(String), context: { requestId: 'req-1' } },
    });
  });

  it('masks unexpected GraphQL resolver errors and passes domain errors with their name and context', () => {
    const mask = createErrorMask(silent);
    const hidden = mask(new GraphQLError('boom', { originalError: new Error('secret internals') })) as GraphQLError;
    expect(hidden.message).not.toContain('secret');
    expect(hidden.extensions.code).toBe('Server.Internal');
    const domain = mask(new GraphQLError('x', { originalError: new InvalidRequestError([{ path: 'name', message: 'too short' }]) })) as GraphQLError;
    expect(domain.extensions).toMatchObject({ code: 'Request.Invalid', context: { issues: [{ path: 'name', message: 'too short' }] } });
    const validation = new GraphQLError('Cannot query field "nope" on type "Query".');
    expect(mask(validation)).toBe(validation);
  });

  it('keeps the body identical when errors are forced to HTTP 200', async () => {
    const error = new DomainError('Envelope.NotFound', 'No envelope with this id.', { envelopeId: 'x' });
    const normal = errorResponse(error, { requestId: 'r', alwaysHttp200: false });
    const legacy = errorResponse(error, { requestId: 'r', alwaysHttp200: true });
    expect(normal.status).toBe(404);
    expect(legacy.status).toBe(200);
    expect(await legacy.text()).toBe(await normal.text());
  });
});

describe('Retry-After on every 503 (issue 31)', () => {
  it('is sent with every error the table answers 503, whether or not the error named a time', () => {
    const names = errorNamesWithStatus(503);
    expect(names).toEqual(expect.arrayContaining(['Server.Unavailable', 'Server.Busy', 'Storage.Unavailable', 'Storage.ObjectMissing', 'Subscription.Unavailable']));
    for (const name of names) {
      const answer = errorAnswer(new DomainError(name, 'x'), { requestId: 'r', alwaysHttp200: false });
      expect(answer.status).toBe(503);
      expect(answer.headers['retry-after'], name).toMatch(/^[1-9][0-9]*$/);
    }
  });

  it('says the same time in the header and in context.retryAfterSeconds for the errors the service raises', async () => {
    const raised = [
      new ServiceUnavailableError(),
      normalizeError(new Error('timeout exceeded when trying to connect'), silent),
      new ServerBusyError('busy', { reason: 'queue_full' }),
      new ServerBusyError('still being prepared', { retryAfterSeconds: 60 }),
      new StorageUnavailableError(),
      new StorageObjectMissingError(),
      new SubscriptionUnavailableError(),
    ];
    for (const error of raised) {
      const response = errorResponse(error, { requestId: 'r', alwaysHttp200: false });
      expect(response.status).toBe(503);
      const body = (await response.json()) as { error: { context: { retryAfterSeconds: number } } };
      expect(response.headers.get('retry-after'), error.name).toBe(String(body.error.context.retryAfterSeconds));
    }
  });
});

describe('errors from below the domain', () => {
  it('names a lost optimistic-lock race Resource.Conflict (409) and an unreachable database Server.Unavailable (503)', async () => {
    const { OptimisticLockError } = await import('@mikro-orm/core');
    const conflict = normalizeError(new OptimisticLockError('version mismatch'), silent);
    expect(conflict.name).toBe('Resource.Conflict');
    expect(httpStatusForError(conflict.name)).toBe(409);
    const unavailable = normalizeError(new Error('timeout exceeded when trying to connect'), silent);
    expect(unavailable.name).toBe('Server.Unavailable');
    expect(httpStatusForError(unavailable.name)).toBe(503);
    expect(unavailable.description).not.toContain('timeout exceeded');
  });
});
