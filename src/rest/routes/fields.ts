import { createFields, deleteField, documentedCreateFieldsInput, updateField, updateFieldInput } from '../../domain/field/field.service.ts';
import { placeFields, placeFieldsInput } from '../../domain/field/placement.service.ts';
import { readField, readFields } from '../../domain/owner/owner.read.ts';
import { readJsonObject } from '../../http/body.ts';
import { CORRECTION_NOTE, OWNER_CHANGE_ERRORS, ownerContentRoutes, ownerInPath } from '../owner-routes.ts';

const CREATE_BODY = {
  schema: documentedCreateFieldsInput,
  example: {
    fields: [
      {
        type: 'simple_signature',
        identifier: 'buyer-signature',
        recipientId: '<recipientId>',
        views: [{ documentId: '<documentId>', page: 0, location: { x: 72, y: 700 }, size: { width: 180, height: 40 } }],
      },
    ],
  },
};
const PLACE_DESCRIPTION =
  'Creates fields from the document itself: its text tags (`{{sig;role=buyer}}`, syntax in docs/fields.md, "Placing fields from the PDF") or its own form fields. Answers `{ fields, unmatched: [ { tag, page, reason } ] }`; what cannot be placed is listed, not refused. With `hideTags` the placed tags are removed from the document.';
const PLACE_BODY = { schema: placeFieldsInput, example: { from: 'tags', roles: { buyer: '<recipientId>' }, hideTags: true } };
const PLACE_ERRORS = ['Document.NotFound', 'Document.TooManyTags', 'Document.TooComplex', 'Document.InspectionLimitExceeded', 'Resource.Conflict', 'Server.Busy'];
const UPDATE_BODY = { schema: updateFieldInput, example: { field: { required: false } } };

/** The interface spec (docs/reference/interface-spec.md) §4.4, §4.7 ("same body as 4.4") and docs/reference/contract.md §5: fields of an envelope or a template. */
export const fieldRoutes = ownerContentRoutes([
  {
    method: 'POST',
    path: '/fields',
    docs: {
      envelope: {
        summary: 'Place fields (all or none)',
        description: CORRECTION_NOTE.fields,
        body: CREATE_BODY,
        isIdempotent: true,
        errors: [...OWNER_CHANGE_ERRORS.envelope, 'Recipient.AlreadyCompleted', 'Envelope.CapacityExceeded', 'Recipient.NotFound', 'Document.NotFound', 'Field.NotAllowedForRecipient'],
      },
      template: {
        summary: 'Place template fields (all or none)',
        body: CREATE_BODY,
        isIdempotent: true,
        errors: [...OWNER_CHANGE_ERRORS.template, 'Template.CapacityExceeded', 'Field.NotAllowedForRecipient'],
      },
    },
    async handler({ request, params, context }) {
      const fields = await createFields(context, { owner: ownerInPath(params), input: await readJsonObject(request), idempotencyKey: context.idempotencyKey });
      return { fields };
    },
  },
  {
    method: 'POST',
    path: '/documents/:documentId/place-fields',
    docs: {
      envelope: {
        summary: 'Place fields from the document’s text tags or its own form (all or none)',
        description: PLACE_DESCRIPTION,
        body: PLACE_BODY,
        errors: [
          ...OWNER_CHANGE_ERRORS.envelope,
          'Envelope.AlreadySigned',
          'Recipient.AlreadyCompleted',
          'Envelope.CapacityExceeded',
          'Field.DuplicateIdentifier',
          'Field.NotAllowedForRecipient',
          ...PLACE_ERRORS,
        ],
      },
      template: {
        summary: 'Place template fields from the document’s text tags or its own form (all or none)',
        description: PLACE_DESCRIPTION,
        body: PLACE_BODY,
        errors: [...OWNER_CHANGE_ERRORS.template, 'Template.CapacityExceeded', 'Field.DuplicateIdentifier', 'Field.NotAllowedForRecipient', ...PLACE_ERRORS],
      },
    },
    async handler({ request, params, context }) {
      return placeFields(context, { owner: ownerInPath(params), documentId: params.documentId, input: await readJsonObject(request) });
    },
  },
  {
    method: 'GET',
    path: '/fields',
    docs: { envelope: { summary: 'List an envelope’s fields' } },
    async handler({ params, context }) {
      return { fields: await readFields(context, { owner: ownerInPath(params) }) };
    },
  },
  {
    method: 'GET',
    path: '/fields/:fieldId',
    docs: { envelope: { summary: 'Read a field' } },
    async handler({ params, context }) {
      return { field: await readField(context, { owner: ownerInPath(params), fieldId: params.fieldId }) };
    },
  },
  {
    method: 'PATCH',
    path: '/fields/:fieldId',
    docs: {
      envelope: {
        summary: 'Change a field of a draft, or of a sent envelope',
        description: CORRECTION_NOTE.fields,
        body: UPDATE_BODY,
        errors: [...OWNER_CHANGE_ERRORS.envelope, 'Recipient.AlreadyCompleted', 'Envelope.CapacityExceeded', 'Field.NotAllowedForRecipient'],
      },
      template: { summary: 'Change a template field', body: UPDATE_BODY, errors: [...OWNER_CHANGE_ERRORS.template, 'Field.NotAllowedForRecipient'] },
    },
    async handler({ request, params, context }) {
      const field = await updateField(context, { owner: ownerInPath(params), fieldId: params.fieldId, input: await readJsonObject(request) });
      return { field };
    },
  },
  {
    method: 'DELETE',
    path: '/fields/:fieldId',
    docs: {
      envelope: {
        summary: 'Remove a field from a draft, or from a sent envelope',
        description: CORRECTION_NOTE.fields,
        errors: [...OWNER_CHANGE_ERRORS.envelope, 'Recipient.AlreadyCompleted', 'Field.InUse'],
      },
      template: { summary: 'Remove a template field', errors: [...OWNER_CHANGE_ERRORS.template, 'Field.InUse'] },
    },
    async handler({ params, context }) {
      await deleteField(context, { owner: ownerInPath(params), fieldId: params.fieldId });
      return { deleted: true };
    },
  },
]);
