import { readField, readFields } from '../../domain/envelope/envelope.read.ts';
import { createFields, deleteField, updateField } from '../../domain/field/field.service.ts';
import { readJsonObject } from '../body.ts';
import type { RestRoute } from '../router.ts';

/** Spec §4.4 and contract §5: fields of an envelope. */
export const fieldRoutes: RestRoute[] = [
  {
    method: 'POST',
    path: '/envelopes/:envelopeId/fields',
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
    async handler({ params, context }) {
      return { fields: await readFields(context, { envelopeId: params.envelopeId }) };
    },
  },
  {
    method: 'GET',
    path: '/envelopes/:envelopeId/fields/:fieldId',
    async handler({ params, context }) {
      return { field: await readField(context, { envelopeId: params.envelopeId, fieldId: params.fieldId }) };
    },
  },
  {
    method: 'PATCH',
    path: '/envelopes/:envelopeId/fields/:fieldId',
    async handler({ request, params, context }) {
      const field = await updateField(context, { envelopeId: params.envelopeId, fieldId: params.fieldId, input: await readJsonObject(request) });
      return { field };
    },
  },
  {
    method: 'DELETE',
    path: '/envelopes/:envelopeId/fields/:fieldId',
    async handler({ params, context }) {
      await deleteField(context, { envelopeId: params.envelopeId, fieldId: params.fieldId });
      return { deleted: true };
    },
  },
];
