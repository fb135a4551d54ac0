import { readEnvelope } from '../../domain/envelope/envelope.read.ts';
import { dryRunJumpstart, JUMPSTARTED_ENVELOPE_INCLUDE, jumpstartEnvelope } from '../../domain/jumpstart/jumpstart.service.ts';
import type { TemplateRecipientData } from '../../domain/owner/owner.read.ts';
import { readTemplate, readTemplatePage, type TemplateData, type TemplatePageData } from '../../domain/template/template.read.ts';
import { createTemplate, deleteTemplate, updateTemplate } from '../../domain/template/template.service.ts';
import { builder } from '../builder.ts';
import { JSON_VALUE_KEYS, withoutNulls } from '../input.ts';
import { connectionNodesOf, nested, selectionOf, templateIncludeOf } from '../selection.ts';
import { DeletedPayload, keysetConnection, MissingDataMode, pageArgs } from './common.ts';
import { DocumentType, documentMutations } from './document.ts';
import { EnvelopeType } from './envelope.ts';
import { FieldType, fieldMutations } from './field.ts';
import { GRAPHQL_OWNERS } from './owner.ts';
import { AgentInput, recipientKeyFields, recipientKeyInputs, recipientMutations } from './recipient.ts';

export const TemplateRecipientType = builder.objectRef<TemplateRecipientData>('TemplateRecipient').implement({
  description:
    'A role of a template (interface spec §2.7): as an envelope recipient, plus `fixed` and an optional pre-assigned person (a team user, a contact, or a contact group whose members all become agents).',
  fields: (t) => ({
    ...recipientKeyFields(t, 'Your stable slug for the role, unique in the template; jumpstart entries name roles by it.'),
    fixed: t.exposeBoolean('fixed', {
      description: 'true: a jumpstart always uses the pre-assigned person and ignores its entry. false: the pre-assignment is a default an entry replaces.',
    }),
    userId: t.id({ nullable: true, description: 'Pre-assigned team user.', resolve: (role) => role.userId }),
    contactId: t.id({ nullable: true, description: 'Pre-assigned contact.', resolve: (role) => role.contactId }),
    contactGroupId: t.id({ nullable: true, description: 'Pre-assigned contact group: every member becomes an agent.', resolve: (role) => role.contactGroupId }),
    createdAt: t.field({ type: 'DateTime', resolve: (role) => role.createdAt }),
  }),
});

export const TemplateType = builder.objectRef<TemplateData>('Template').implement({
  description: 'A reusable blueprint of documents, recipient roles and fields; jumpstartEnvelope makes a draft envelope from it in one request.',
  fields: (t) => ({
    id: t.exposeID('id'),
    name: t.exposeString('name', { description: '2–48 characters.' }),
    description: t.string({ nullable: true, resolve: (template) => template.description }),
    teamScope: t.idList({ description: 'Other teams of your workspace that may read and jumpstart it (only the owning team changes it).', resolve: (template) => template.teamScope }),
    teamId: t.id({ description: 'The owning team.', resolve: (template) => template.teamId }),
    createdAt: t.field({ type: 'DateTime', resolve: (template) => template.createdAt }),
    updatedAt: t.field({ type: 'DateTime', resolve: (template) => template.updatedAt }),
    documents: t.field({ type: [DocumentType], description: 'The documents, in display order.', resolve: (template) => nested(template.documents, 'Template.documents') }),
    recipients: t.field({ type: [TemplateRecipientType], description: 'The roles, in signing order.', resolve: (template) => nested(template.recipients, 'Template.recipients') }),
    fields: t.field({ type: [FieldType], resolve: (template) => nested(template.fields, 'Template.fields') }),
  }),
});

const TemplateConnection = keysetConnection('Template', {
  description: 'A page of the templates your team may use (its own and those shared with it), newest first.',
  node: TemplateType,
  nodesOf: (page: TemplatePageData) => page.templates,
});

builder.queryFields((t) => ({
  template: t.field({
    type: TemplateType,
    description: 'One template your team owns or that is shared with it. Any other id gives Template.NotFound.',
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, context, info) => readTemplate(context, String(args.id), templateIncludeOf(selectionOf(info))),
  }),
  templates: t.field({
    type: TemplateConnection,
    description: 'The templates your team may use, newest first.',
    args: {
      ...pageArgs(t.arg),
    },
    resolve: (_root, args, context, info) =>
      readTemplatePage(context, { limit: args.first ?? undefined, cursor: args.after ?? undefined }, templateIncludeOf(connectionNodesOf(selectionOf(info)))),
  }),
}));

const CreateTemplateInput = builder.inputType('CreateTemplateInput', {
  description: 'A new template (REST: POST /templates).',
  fields: (t) => ({
    name: t.string({ required: true, description: '2–48 characters.' }),
    description: t.string({ required: false, description: 'At most 2000 characters.' }),
    teamScope: t.idList({ required: false, description: 'Other teams of your workspace that may use it.' }),
  }),
});

const UpdateTemplateInput = builder.inputType('UpdateTemplateInput', {
  description: 'Only the given keys change; teamScope, when given, replaces the whole list. Owning team only.',
  fields: (t) => ({
    name: t.string({ required: false }),
    description: t.string({ required: false, description: 'null clears it.' }),
    teamScope: t.idList({ required: false }),
  }),
});

builder.mutationFields((t) => ({
  createTemplate: t.field({
    type: TemplateType,
    nullable: true,
    description: 'Creates a template (REST: POST /templates). Honours the Idempotency-Key header.',
    args: { input: t.arg({ type: CreateTemplateInput, required: true }) },
    resolve: (_root, args, context) => createTemplate(context, { input: withoutNulls(args.input), idempotencyKey: context.idempotencyKey }),
  }),
  updateTemplate: t.field({
    type: TemplateType,
    nullable: true,
    description: 'Changes a template your team owns (REST: PATCH /templates/{id}).',
    args: { id: t.arg.id({ required: true }), input: t.arg({ type: UpdateTemplateInput, required: true }) },
    resolve: async (_root, args, context, info) => {
      await updateTemplate(context, { templateId: String(args.id), input: withoutNulls(args.input, { keepNull: ['description'] }) });
      return readTemplate(context, String(args.id), templateIncludeOf(selectionOf(info)));
    },
  }),
  deleteTemplate: t.field({
    type: DeletedPayload,
    nullable: true,
    description: 'Deletes a template your team owns, with its documents, roles and fields (REST: DELETE /templates/{id}). Envelopes made from it are unaffected.',
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_root, args, context) => {
      await deleteTemplate(context, { templateId: String(args.id) });
      return { id: String(args.id) };
    },
  }),
}));

const AddTemplateRecipientInput = builder.inputType('AddTemplateRecipientInput', {
  description: 'A role of a template (REST body: { recipient: {...} }): the envelope recipient keys without agents, plus fixed and at most one pre-assigned person.',
  fields: (t) => ({
    ...recipientKeyInputs(t, 'add', 'role'),
    fixed: t.boolean({ required: false, description: 'Default false.' }),
    userId: t.id({ required: false, description: 'Pre-assigned team user.' }),
    contactId: t.id({ required: false, description: 'Pre-assigned contact.' }),
    contactGroupId: t.id({ required: false, description: 'Pre-assigned contact group.' }),
  }),
});

const UpdateTemplateRecipientInput = builder.inputType('UpdateTemplateRecipientInput', {
  description: 'Only the given keys change. Giving userId, contactId or contactGroupId replaces the pre-assignment; null clears it (and hostedById/delegatedById).',
  fields: (t) => ({
    ...recipientKeyInputs(t, 'update', 'role'),
    fixed: t.boolean({ required: false }),
    userId: t.id({ required: false }),
    contactId: t.id({ required: false }),
    contactGroupId: t.id({ required: false }),
  }),
});

documentMutations(GRAPHQL_OWNERS.template, {
  add: 'Uploads a PDF to a template your team owns (REST: POST /templates/{id}/documents). Honours the Idempotency-Key header.',
  update: 'Renames or reorders a document of a template (REST: PATCH /templates/{id}/documents/{documentId}).',
  delete: 'Removes a document of a template, and fields left without a placement (REST: DELETE /templates/{id}/documents/{documentId}).',
});

recipientMutations(GRAPHQL_OWNERS.template, {
  type: TemplateRecipientType,
  addInput: AddTemplateRecipientInput,
  updateInput: UpdateTemplateRecipientInput,
  clearedByNull: ['userId', 'contactId', 'contactGroupId'],
  descriptions: {
    add: 'Adds a role to a template (REST: POST /templates/{id}/recipients). Honours the Idempotency-Key header.',
    update: 'Changes a role of a template (REST: PATCH /templates/{id}/recipients/{recipientId}).',
    delete: 'Removes a role and its fields from a template (REST: DELETE /templates/{id}/recipients/{recipientId}); refused while another role is hosted by or delegates through it.',
  },
});

fieldMutations(GRAPHQL_OWNERS.template, {
  create: 'Adds many fields to a template at once, all or nothing (REST: POST /templates/{id}/fields). Allowed at any time.',
  update: 'Changes a field of a template (REST: PATCH /templates/{id}/fields/{fieldId}). Allowed at any time.',
  delete: 'Removes a field from a template (REST: DELETE /templates/{id}/fields/{fieldId}).',
  place: "Places fields on a template's document from its text tags or its own form, all or nothing (REST: POST /templates/{id}/documents/{documentId}/place-fields).",
});

const JumpstartRecipientInput = builder.inputType('JumpstartRecipientInput', {
  description: 'The people of one role of the template, named by exactly one of identifier or id. Ignored for a fixed role.',
  fields: (t) => ({
    identifier: t.string({ required: false, description: 'The role identifier, exactly as in the template.' }),
    id: t.id({ required: false, description: "The template role's id." }),
    agents: t.field({ type: [AgentInput], required: false }),
  }),
});

const JumpstartEnvelopeInput = builder.inputType('JumpstartEnvelopeInput', {
  description: 'A draft envelope from a template (REST: POST /envelopes/jumpstart/{templateId}).',
  fields: (t) => ({
    name: t.string({ required: false, description: "2–48 characters; defaults to the template's name." }),
    expirationPeriodDays: t.int({ required: false, description: '1–90, default 30.' }),
    reminderInitialDelayDays: t.int({ required: false, description: '0–30, default 0.' }),
    reminderRepeatIntervalDays: t.int({ required: false, description: '0–30, default 0.' }),
    reminderBeforeExpirationDays: t.int({ required: false, description: '0–30, default 0.' }),
    context: t.field({ type: 'JSONObject', required: false }),
    recipients: t.field({ type: [JumpstartRecipientInput], required: false, description: 'At most one entry per role.' }),
    data: t.field({ type: 'JSONObject', required: false, description: 'Values for the template documents’ {{data:PATH}} tags, drawn into the envelope’s documents (README "Data merge").' }),
    missingData: t.field({
      type: MissingDataMode,
      required: false,
      description: 'refuse (default): a data tag whose path data lacks refuses the jumpstart (Request.Invalid listing every missing path); blank: it is left blank.',
    }),
  }),
});

builder.mutationField('jumpstartEnvelope', (t) =>
  t.field({
    type: EnvelopeType,
    nullable: true,
    description:
      'Creates a draft envelope from a template your team owns or that is shared with it: copies of its documents, roles and fields, people from the entries or the template. Honours the Idempotency-Key header.',
    args: {
      templateId: t.arg.id({ required: true }),
      input: t.arg({ type: JumpstartEnvelopeInput, required: false }),
      dryRun: t.arg.boolean({
        required: false,
        defaultValue: false,
        description:
          'true: answer the envelope the jumpstart would make (its ids exist nowhere) with `dryRun` set to what sending it would do; nothing is made or stored, the Idempotency-Key is not used.',
      }),
    },
    resolve: async (_root, args, context) => {
      if (args.dryRun) {
        const { envelope, ...dryRun } = await dryRunJumpstart(context, {
          templateId: String(args.templateId),
          input: withoutNulls(args.input ?? {}, { opaque: [...JSON_VALUE_KEYS, 'data'] }),
          read: (inside, envelopeId) => readEnvelope(inside, envelopeId, JUMPSTARTED_ENVELOPE_INCLUDE),
        });
        return { ...envelope, dryRun };
      }
      return jumpstartEnvelope(context, {
        templateId: String(args.templateId),
        input: withoutNulls(args.input ?? {}, { opaque: [...JSON_VALUE_KEYS, 'data'] }),
        idempotencyKey: context.idempotencyKey,
      });
    },
  }),
);
