import { type FieldType as FieldTypeName, fieldTypes } from '../../domain/field/field.entity.ts';
import { createFields, deleteField, updateField } from '../../domain/field/field.service.ts';
import { type PlacedFields, placeFields, type Unmatched } from '../../domain/field/placement.service.ts';
import { type FieldData, type FieldPlacementData, readField } from '../../domain/owner/owner.read.ts';
import { builder } from '../builder.ts';
import { withoutNulls } from '../input.ts';
import { nested } from '../selection.ts';
import { DeletedPayload } from './common.ts';
import { EnvelopeType } from './envelope.ts';
import { GRAPHQL_OWNERS, type GraphqlOwner, ownerIdArg, ownerMutationName, ownerOfArgs } from './owner.ts';

const FieldTypeEnum = builder.enumType('FieldType', {
  description: 'The kind of input; config and value shapes per type are in docs/fields.md.',
  values: fieldTypes,
});

const PointType = builder.objectRef<{ x: number; y: number }>('Point').implement({
  description: 'Points (1/72 inch) from the page’s left and top edges.',
  fields: (t) => ({ x: t.exposeFloat('x'), y: t.exposeFloat('y') }),
});
const SizeType = builder.objectRef<{ width: number; height: number }>('Size').implement({
  description: 'In points.',
  fields: (t) => ({ width: t.exposeFloat('width'), height: t.exposeFloat('height') }),
});

const FieldViewType = builder.objectRef<FieldPlacementData>('FieldView').implement({
  description: 'One placement of a field on a document page.',
  fields: (t) => ({
    documentId: t.exposeID('documentId'),
    page: t.exposeInt('page', { description: 'Zero-based page index.' }),
    location: t.field({ type: PointType, resolve: (view) => view.location }),
    size: t.field({ type: SizeType, resolve: (view) => view.size }),
  }),
});

export const FieldType = builder.objectRef<FieldData>('Field').implement({
  description: 'An interactive element assigned to one recipient and placed on one or more pages.',
  fields: (t) => ({
    id: t.exposeID('id'),
    identifier: t.exposeString('identifier', { description: 'Your slug, unique in the envelope.' }),
    type: t.field({ type: FieldTypeEnum, resolve: (field) => field.type as FieldTypeName }),
    recipientId: t.id({ resolve: (field) => field.recipientId ?? '' }),
    label: t.string({ nullable: true, resolve: (field) => field.label }),
    tooltip: t.string({ nullable: true, resolve: (field) => field.tooltip }),
    required: t.exposeBoolean('required'),
    readonly: t.exposeBoolean('readonly'),
    value: t.field({ type: 'JSONObject', nullable: true, resolve: (field) => field.value }),
    config: t.field({ type: 'JSONObject', resolve: (field) => field.config }),
    visibleWhen: t.field({
      type: 'JSONObject',
      nullable: true,
      description: 'Conditions under which the field is shown (`{ all?, any? }`, docs/fields.md); null: always.',
      resolve: (field) => field.visibleWhen,
    }),
    views: t.field({ type: [FieldViewType], resolve: (field) => nested(field.views, 'Field.views') }),
    submittedAt: t.field({ type: 'DateTime', nullable: true, resolve: (field) => field.submittedAt }),
  }),
});

builder.objectField(EnvelopeType, 'fields', (t) =>
  t.field({
    type: [FieldType],
    resolve: (envelope) => nested(envelope.fields, 'Envelope.fields'),
  }),
);

const PointInput = builder.inputType('PointInput', {
  description: 'Points from the page’s left and top edges.',
  fields: (t) => ({ x: t.float({ required: true }), y: t.float({ required: true }) }),
});
const SizeInput = builder.inputType('SizeInput', {
  description: 'In points, both more than 0.',
  fields: (t) => ({ width: t.float({ required: true }), height: t.float({ required: true }) }),
});
const FieldViewInput = builder.inputType('FieldViewInput', {
  description: 'A placement: the box must lie on an existing page of a document of the same envelope.',
  fields: (t) => ({
    documentId: t.id({ required: true }),
    page: t.int({ required: true, description: 'Zero-based.' }),
    location: t.field({ type: PointInput, required: true }),
    size: t.field({ type: SizeInput, required: true }),
  }),
});

const FieldInput = builder.inputType('FieldInput', {
  description: 'A new field; config and value shapes per type are in docs/fields.md.',
  fields: (t) => ({
    type: t.field({ type: FieldTypeEnum, required: true }),
    recipientId: t.id({ required: true }),
    identifier: t.string({ required: true }),
    label: t.string({ required: false }),
    tooltip: t.string({ required: false }),
    required: t.boolean({ required: false, description: 'Default: true for signatures, false otherwise.' }),
    readonly: t.boolean({ required: false }),
    value: t.field({ type: 'JSONObject', required: false }),
    config: t.field({ type: 'JSONObject', required: false }),
    visibleWhen: t.field({ type: 'JSONObject', required: false, description: 'Conditions under which the field is shown (docs/fields.md); null or absent: always.' }),
    views: t.field({ type: [FieldViewInput], required: true }),
  }),
});

const UpdateFieldInput = builder.inputType('UpdateFieldInput', {
  description: 'Only the given keys change; views, when given, replace all views.',
  fields: (t) => ({
    type: t.field({ type: FieldTypeEnum, required: false }),
    recipientId: t.id({ required: false }),
    identifier: t.string({ required: false }),
    label: t.string({ required: false }),
    tooltip: t.string({ required: false }),
    required: t.boolean({ required: false }),
    readonly: t.boolean({ required: false }),
    value: t.field({ type: 'JSONObject', required: false }),
    config: t.field({ type: 'JSONObject', required: false }),
    visibleWhen: t.field({ type: 'JSONObject', required: false, description: 'null: always shown.' }),
    views: t.field({ type: [FieldViewInput], required: false }),
  }),
});

const fieldInputOptions = { keepNull: ['label', 'tooltip', 'value', 'visibleWhen'], opaque: ['value', 'config', 'visibleWhen'] };

const PlacementSourceEnum = builder.enumType('PlacementSource', {
  description: 'What fields are placed from: the document\'s text tags or its own form (docs/fields.md, "Placing fields from the PDF").',
  values: { tags: { value: 'tags' }, acroform: { value: 'acroform' } } as const,
});

const UnmatchedPlacementType = builder.objectRef<Unmatched>('UnmatchedPlacement').implement({
  description: 'A tag (or form field, by name) that did not become a field, and why.',
  fields: (t) => ({
    tag: t.exposeString('tag'),
    page: t.exposeInt('page'),
    reason: t.exposeString('reason'),
  }),
});

const PlacedFieldsType = builder.objectRef<PlacedFields>('PlacedFields').implement({
  fields: (t) => ({
    fields: t.field({ type: [FieldType], resolve: (placed) => placed.fields }),
    unmatched: t.field({ type: [UnmatchedPlacementType], resolve: (placed) => placed.unmatched }),
  }),
});

/**
 * The field mutations of an owner (an envelope's createFields, updateField, deleteField; a
 * template's createTemplateFields, …): one set of resolvers, registered for each owner.
 */
export function fieldMutations(owner: GraphqlOwner, descriptions: { create: string; update: string; delete: string; place: string }) {
  builder.mutationFields((t) => ({
    [ownerMutationName(owner, 'place', 'Fields')]: t.field({
      type: PlacedFieldsType,
      nullable: true,
      description: descriptions.place,
      args: {
        ...ownerIdArg(owner, t.arg.id({ required: true })),
        documentId: t.arg.id({ required: true }),
        from: t.arg({ type: PlacementSourceEnum, required: true }),
        roles: t.arg({ type: 'JSONObject', required: false, description: 'Tag role (or form field name prefix, or "*") → recipient id.' }),
        hideTags: t.arg.boolean({ required: false }),
      },
      resolve: (_root, args, context) =>
        placeFields(context, {
          owner: ownerOfArgs(owner, args),
          documentId: String(args.documentId),
          input: { from: args.from, ...(args.roles != null ? { roles: args.roles } : {}), ...(args.hideTags != null ? { hideTags: args.hideTags } : {}) },
        }),
    }),
    [ownerMutationName(owner, 'create', 'Fields')]: t.field({
      type: [FieldType],
      nullable: true,
      description: descriptions.create,
      args: { ...ownerIdArg(owner, t.arg.id({ required: true })), fields: t.arg({ type: [FieldInput], required: true }) },
      resolve: (_root, args, context) =>
        createFields(context, {
          owner: ownerOfArgs(owner, args),
          input: { fields: withoutNulls(args.fields, fieldInputOptions) },
          idempotencyKey: context.idempotencyKey,
        }),
    }),
    [ownerMutationName(owner, 'update', 'Field')]: t.field({
      type: FieldType,
      nullable: true,
      description: descriptions.update,
      args: {
        ...ownerIdArg(owner, t.arg.id({ required: true })),
        fieldId: t.arg.id({ required: true }),
        input: t.arg({ type: UpdateFieldInput, required: true }),
      },
      resolve: (_root, args, context) =>
        updateField(context, { owner: ownerOfArgs(owner, args), fieldId: String(args.fieldId), input: { field: withoutNulls(args.input, fieldInputOptions) } }),
    }),
    [ownerMutationName(owner, 'delete', 'Field')]: t.field({
      type: DeletedPayload,
      nullable: true,
      description: descriptions.delete,
      args: { ...ownerIdArg(owner, t.arg.id({ required: true })), fieldId: t.arg.id({ required: true }) },
      resolve: async (_root, args, context) => {
        await deleteField(context, { owner: ownerOfArgs(owner, args), fieldId: String(args.fieldId) });
        return { id: String(args.fieldId) };
      },
    }),
  }));
}

fieldMutations(GRAPHQL_OWNERS.envelope, {
  create:
    'Adds many fields to a draft at once, all or nothing (REST: POST /envelopes/{id}/fields). On a sent envelope it is a correction (moves revision, records envelope.corrected): refused for fields of a recipient that has acted (completed, or approved) with Recipient.AlreadyCompleted.',
  update:
    'Changes a field of a draft (REST: PATCH /envelopes/{id}/fields/{fieldId}). On a sent envelope it is a correction (moves revision, records envelope.corrected): refused for fields of a recipient that has acted (completed, or approved) with Recipient.AlreadyCompleted.',
  delete:
    'Removes a field from a draft (REST: DELETE /envelopes/{id}/fields/{fieldId}). On a sent envelope it is a correction (moves revision, records envelope.corrected): refused for fields of a recipient that has acted (completed, or approved) with Recipient.AlreadyCompleted.',
  place:
    "Places fields on a draft's document from its text tags or its own form, all or nothing (REST: POST /envelopes/{id}/documents/{documentId}/place-fields). On a sent envelope only while nobody has acted (Envelope.AlreadySigned).",
});

builder.queryField('field', (t) =>
  t.field({
    type: FieldType,
    args: { envelopeId: t.arg.id({ required: true }), fieldId: t.arg.id({ required: true }) },
    resolve: (_root, args, context) => readField(context, { owner: { kind: 'envelope', id: String(args.envelopeId) }, fieldId: String(args.fieldId) }),
  }),
);
