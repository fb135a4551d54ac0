import { readRecipient, readRecipients } from '../../domain/envelope/envelope.read.ts';
import { addRecipient, deleteRecipient, updateRecipient } from '../../domain/recipient/recipient.service.ts';
import { InvalidRequestError } from '../../shared/errors.ts';
import { readJsonObject } from '../body.ts';
import type { RestRoute } from '../router.ts';

/** The spec wraps one recipient in `{ recipient: {...} }`. */
export async function readRecipientBody(request: Request): Promise<unknown> {
  const body = await readJsonObject(request);
  if (typeof body.recipient !== 'object' || body.recipient === null || Array.isArray(body.recipient)) {
    throw new InvalidRequestError([{ path: 'recipient', message: 'must be an object with the recipient' }]);
  }
  const extra = Object.keys(body).filter((key) => key !== 'recipient');
  if (extra.length > 0) throw new InvalidRequestError(extra.map((key) => ({ path: key, message: 'is not a known property' })));
  return body.recipient;
}

/** Spec §4.3 and contract §5: recipients of an envelope. */
export const recipientRoutes: RestRoute[] = [
  {
    method: 'POST',
    path: '/envelopes/:envelopeId/recipients',
    async handler({ request, params, context }) {
      const recipient = await addRecipient(context, {
        envelopeId: params.envelopeId,
        input: await readRecipientBody(request),
        idempotencyKey: context.idempotencyKey,
      });
      return { recipient };
    },
  },
  {
    method: 'GET',
    path: '/envelopes/:envelopeId/recipients',
    async handler({ params, context }) {
      return { recipients: await readRecipients(context, { envelopeId: params.envelopeId }) };
    },
  },
  {
    method: 'GET',
    path: '/envelopes/:envelopeId/recipients/:recipientId',
    async handler({ params, context }) {
      return { recipient: await readRecipient(context, { envelopeId: params.envelopeId, recipientId: params.recipientId }) };
    },
  },
  {
    method: 'PATCH',
    path: '/envelopes/:envelopeId/recipients/:recipientId',
    async handler({ request, params, context }) {
      const recipient = await updateRecipient(context, {
        envelopeId: params.envelopeId,
        recipientId: params.recipientId,
        input: await readRecipientBody(request),
      });
      return { recipient };
    },
  },
  {
    method: 'DELETE',
    path: '/envelopes/:envelopeId/recipients/:recipientId',
    async handler({ params, context }) {
      await deleteRecipient(context, { envelopeId: params.envelopeId, recipientId: params.recipientId });
      return { deleted: true };
    },
  },
];
