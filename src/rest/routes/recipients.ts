import { readRecipient, readRecipients } from '../../domain/owner/owner.read.ts';
import { addRecipient, createRecipientInput, deleteRecipient, updateRecipient, updateRecipientInput } from '../../domain/recipient/recipient.service.ts';
import { InvalidRequestError } from '../../shared/errors.ts';
import { readJsonObject } from '../../http/body.ts';
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
    doc: { summary: 'Add a recipient role with its people', body: { schema: createRecipientInput, wrap: 'recipient', example: { recipient: { type: 'signer', identifier: 'buyer', roleName: 'Buyer', order: 1, agents: [{ info: { name: 'Ada Lovelace', email: 'ada@example.com' } }] } } }, isIdempotent: true, errors: ['Envelope.NotDraft', 'Envelope.Busy', 'Envelope.CapacityExceeded', 'Recipient.DuplicateIdentifier', 'Contact.NotFound', 'ContactGroup.NotFound', 'User.NotFound'] },
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
    doc: { summary: 'List an envelope’s recipients' },
    async handler({ params, context }) {
      return { recipients: await readRecipients(context, { owner: { kind: 'envelope', id: params.envelopeId } }) };
    },
  },
  {
    method: 'GET',
    path: '/envelopes/:envelopeId/recipients/:recipientId',
    doc: { summary: 'Read a recipient' },
    async handler({ params, context }) {
      return { recipient: await readRecipient(context, { owner: { kind: 'envelope', id: params.envelopeId }, recipientId: params.recipientId }) };
    },
  },
  {
    method: 'PATCH',
    path: '/envelopes/:envelopeId/recipients/:recipientId',
    doc: { summary: 'Change a recipient of a draft', body: { schema: updateRecipientInput, wrap: 'recipient', example: { recipient: { roleName: 'Purchaser' } } }, errors: ['Envelope.NotDraft', 'Envelope.Busy', 'Recipient.HasFields', 'Recipient.DuplicateIdentifier'] },
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
    doc: { summary: 'Remove a recipient from a draft (and its fields)', errors: ['Envelope.NotDraft', 'Envelope.Busy', 'Recipient.HostRecipientBound', 'Recipient.DelegatorRecipientBound'] },
    async handler({ params, context }) {
      await deleteRecipient(context, { envelopeId: params.envelopeId, recipientId: params.recipientId });
      return { deleted: true };
    },
  },
];
