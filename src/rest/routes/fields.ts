import { readField, readFields } from '../../domain/owner/owner.read.ts';
import { createFields, createFieldsInput, deleteField, updateField, updateFieldInput } from '../../domain/field/field.service.ts';
import { readJsonObject } from '../../http/body.ts';
import type { RestRoute } from '../router.ts';

/** Spec §4.4 and contract §5: fields of an envelope. */
export const fieldRoutes: RestRoute[] = [
  {
    method: 'POST',
    path: '/envelopes/:envelopeId/fields',
    doc: { summary: 'Place fields (all or none)', body: { schema: createFieldsInput, example: { fields: [{ type: 'simple_signature', identifier: 'buyer-signature', recipientId: '<recipientId>', views: [{ documentId: '<documentId>', page: 0, location: { x: 72, y: 700 }, size: { width: 180, height: 40 } }] }] } }, isIdempotent: true, errors: ['Envelope.NotDraft', 'Envelope.Busy', 'Envelope.CapacityExceeded', 'Recipient.NotFound', 'Document.NotFound'] },
    async handler({ request, params, context }) {
      const fields = await createFields(context, {
        envelopeId: params.envelopeId,
        input: await readJsonObject(request),
        idempotencyKey: context.idempotencyKey,
      });
      return { fields };
    },
  },
  {
    method: 'GET',
    path: '/envelopes/:envelopeId/fields',
    doc: { summary: 'List an envelope’s fields' },
    async handler({ params, context }) {
      return { fields: await readFields(context, { owner: { kind: 'envelope', id: params.envelopeId } }) };
    },
  },
  {
    method: 'GET',
    path: '/envelopes/:envelopeId/fields/:fieldId',
    doc: { summary: 'Read a field' },
    async handler({ params, context }) {
      return { field: await readField(context, { owner: { kind: 'envelope', id: params.envelopeId }, fieldId: params.fieldId }) };
    },
  },
  {
    method: 'PATCH',
    path: '/envelopes/:envelopeId/fields/:fieldId',
    doc: { summary: 'Change a field of a draft', body: { schema: updateFieldInput, example: { field: { required: false } } }, errors: ['Envelope.NotDraft', 'Envelope.Busy', 'Envelope.CapacityExceeded'] },
    async handler({ request, params, context }) {
      const field = await updateField(context, { envelopeId: params.envelopeId, fieldId: params.fieldId, input: await readJsonObject(request) });
      return { field };
    },
  },
  {
    method: 'DELETE',
    path: '/envelopes/:envelopeId/fields/:fieldId',
    doc: { summary: 'Remove a field from a draft', errors: ['Envelope.NotDraft', 'Envelope.Busy'] },
    async handler({ params, context }) {
      await deleteField(context, { envelopeId: params.envelopeId, fieldId: params.fieldId });
      return { deleted: true };
    },
  },
];
