import type { InputObjectRef, ObjectRef } from '@pothos/core';
import {
  type AgentData,
  type AgentInfoData,
  type AgentNotificationData,
  type RecipientApprovalData,
  type RecipientCoreData,
  type RecipientData,
  readRecipient,
} from '../../domain/owner/owner.read.ts';
import { type AgentNotificationFailure, agentKinds, locales, phoneContactMethods } from '../../domain/recipient/agent.entity.ts';
import { type RecipientType, recipientTypes, type SignatureLevel, signatureLevels } from '../../domain/recipient/recipient.entity.ts';
import { addRecipient, deleteRecipient, updateRecipient } from '../../domain/recipient/recipient.service.ts';
import { builder } from '../builder.ts';
import { withoutNulls } from '../input.ts';
import { nested } from '../selection.ts';
import { DeletedPayload } from './common.ts';
import { EnvelopeType } from './envelope.ts';
import { GRAPHQL_OWNERS, type GraphqlOwner, ownerIdArg, ownerMutationName, ownerOfArgs } from './owner.ts';

type Types = typeof builder extends PothosSchemaTypes.SchemaBuilder<infer T> ? T : never;

export const RecipientTypeEnum = builder.enumType('RecipientType', {
  description:
    'signer: signs remotely. host: runs an in-person session. in_person_signer: signs on its host’s device. delegator: may hand its role to another person. viewer: gets the finished copy.',
  values: recipientTypes,
});
export const SignatureLevelEnum = builder.enumType('SignatureLevel', {
  description: 'simple: the service’s seal only (the default); advanced or qualified: the signer also signs with its own certificate at one of the team’s trust services (issue 35).',
  values: signatureLevels,
});

const AgentKindEnum = builder.enumType('AgentKind', {
  description: 'How an agent names its person: inline info, or a contact, contact group or team user of your team.',
  values: agentKinds,
});
export const LocaleEnum = builder.enumType('Locale', {
  description: 'Language of the signing page and notifications (en-US, tr-TR).',
  values: Object.fromEntries(locales.map((locale) => [locale.replace('-', '_'), { value: locale }])) as Record<string, { value: string }>,
});
export const PhoneContactMethodEnum = builder.enumType('PhoneContactMethod', {
  description: 'Channel for phone one-time passwords.',
  values: phoneContactMethods,
});

const AgentInfoType = builder.objectRef<AgentInfoData>('AgentInfo').implement({
  description: 'A person given inline.',
  fields: (t) => ({
    name: t.exposeString('name'),
    email: t.string({ nullable: true, resolve: (info) => info.email ?? null }),
    phone: t.string({ nullable: true, description: 'E.164.', resolve: (info) => info.phone ?? null }),
    locale: t.field({ type: LocaleEnum, nullable: true, resolve: (info) => info.locale ?? null }),
    phoneContactMethod: t.field({ type: PhoneContactMethodEnum, nullable: true, resolve: (info) => (info.phoneContactMethod as 'sms' | 'whatsapp' | null) ?? null }),
    embedded: t.boolean({ description: 'Signs inside your application (createSigningUrl): gets no invitation, reminder or “your turn” message.', resolve: (info) => info.embedded === true }),
  }),
});

const AgentNotificationFailureType = builder.objectRef<AgentNotificationFailure>('AgentNotificationFailure').implement({
  description: 'A message to this agent that was given up for good (bad address, provider refusal, retries exhausted).',
  fields: (t) => ({
    kind: t.exposeString('kind', { description: 'What the message was: invitation, your_turn, reminder, voided, declined, expired, completed, handed_over, …' }),
    channel: t.exposeString('channel', { nullable: true, description: 'email, sms or whatsapp (null when the person had no address at all).' }),
    reason: t.exposeString('reason', {
      description:
        'Why, as a stable code: mail_refused, mail_deferred, mail_unavailable, phone_provider_refused, phone_provider_unavailable, phone_cap_reached, no_address, no_phone, internal_error, … (docs/errors.md).',
    }),
    error: t.exposeString('error', { description: 'The reason in words (the mail server’s SMTP codes, the SMS provider’s HTTP status); never the service’s internals.' }),
    attempts: t.exposeInt('attempts'),
    failedAt: t.field({ type: 'DateTime', resolve: (failure) => failure.failedAt }),
  }),
});

const AgentNotificationType = builder.objectRef<AgentNotificationData>('AgentNotification').implement({
  description: 'Whether the messages to this agent’s people (invitation, reminders, notices) were delivered.',
  fields: (t) => ({
    lastDeliveredAt: t.field({ type: 'DateTime', nullable: true, resolve: (notification) => notification.lastDeliveredAt }),
    failure: t.field({ type: AgentNotificationFailureType, nullable: true, resolve: (notification) => notification.failure }),
  }),
});

const AgentType = builder.objectRef<AgentData>('Agent').implement({
  description: 'A person behind a recipient role: inline info, or a contact, contact group or team user reference.',
  fields: (t) => ({
    id: t.exposeID('id'),
    kind: t.field({ type: AgentKindEnum, resolve: (agent) => agent.kind }),
    info: t.field({ type: AgentInfoType, nullable: true, resolve: (agent) => agent.info ?? null }),
    contactId: t.id({ nullable: true, resolve: (agent) => agent.contactId ?? null }),
    groupId: t.id({ nullable: true, resolve: (agent) => agent.groupId ?? null }),
    userId: t.id({ nullable: true, resolve: (agent) => agent.userId ?? null }),
    notification: t.field({ type: AgentNotificationType, resolve: (agent) => agent.notification ?? { lastDeliveredAt: null, failure: null } }),
  }),
});

const RecipientApprovalType = builder.objectRef<RecipientApprovalData>('RecipientApproval').implement({
  description: 'One agent’s approval of an approver role.',
  fields: (t) => ({
    agentId: t.exposeID('agentId', { description: 'The agent who approved (each agent counts once towards the quorum).' }),
    name: t.string({ nullable: true, description: 'The person who approved for the agent (a contact group’s member who did).', resolve: (approval) => approval.name }),
    approvedAt: t.field({ type: 'DateTime', resolve: (approval) => approval.approvedAt }),
    comment: t.string({ nullable: true, resolve: (approval) => approval.comment }),
  }),
});

/** The fields every recipient type has, an envelope's `Recipient` and a template's `TemplateRecipient`. */
export function recipientKeyFields<Shape extends RecipientCoreData>(t: PothosSchemaTypes.ObjectFieldBuilder<Types, Shape>, identifierDescription: string) {
  return {
    id: t.id({ resolve: (recipient) => recipient.id }),
    identifier: t.string({ description: identifierDescription, resolve: (recipient) => recipient.identifier }),
    roleName: t.string({ resolve: (recipient) => recipient.roleName }),
    type: t.field({ type: RecipientTypeEnum, resolve: (recipient) => recipient.type as RecipientType }),
    order: t.int({ description: 'Lower orders act first; equal orders act in parallel.', resolve: (recipient) => recipient.order }),
    required: t.boolean({ resolve: (recipient) => recipient.required }),
    quorum: t.int({ description: 'An approver role completes when this many distinct agents approved (1 for every other type).', resolve: (recipient) => recipient.quorum }),
    signatureLevel: t.field({ type: SignatureLevelEnum, resolve: (recipient) => recipient.signatureLevel as SignatureLevel }),
    trustServiceId: t.string({
      nullable: true,
      description: 'The team’s trust service it signs at; null: the team’s first offering its level.',
      resolve: (recipient) => recipient.trustServiceId,
    }),
    color: t.string({ resolve: (recipient) => recipient.color }),
    hostedById: t.id({ nullable: true, resolve: (recipient) => recipient.hostedById }),
    delegatedById: t.id({ nullable: true, resolve: (recipient) => recipient.delegatedById }),
  };
}

export const RecipientTypeRef = builder.objectRef<RecipientData>('Recipient').implement({
  description: 'A role in the envelope’s workflow; people are attached to it as agents.',
  fields: (t) => ({
    ...recipientKeyFields(t, 'Your stable slug for the role, unique in the envelope.'),
    agents: t.field({ type: [AgentType], resolve: (recipient) => nested(recipient.agents, 'Recipient.agents') }),
    approvals: t.field({
      type: [RecipientApprovalType],
      description: 'An approver role’s approvals so far, oldest first; empty for every other type.',
      resolve: (recipient) => nested(recipient.approvals, 'Recipient.approvals'),
    }),
    activatedAt: t.field({ type: 'DateTime', nullable: true, resolve: (recipient) => recipient.activatedAt }),
    completedAt: t.field({ type: 'DateTime', nullable: true, resolve: (recipient) => recipient.completedAt }),
    delegatedAt: t.field({ type: 'DateTime', nullable: true, resolve: (recipient) => recipient.delegatedAt }),
    removedAt: t.field({ type: 'DateTime', nullable: true, resolve: (recipient) => recipient.removedAt }),
  }),
});

builder.objectField(EnvelopeType, 'recipients', (t) =>
  t.field({
    type: [RecipientTypeRef],
    description: 'The recipient roles, in signing order.',
    resolve: (envelope) => nested(envelope.recipients, 'Envelope.recipients'),
  }),
);

const AgentInfoInput = builder.inputType('AgentInfoInput', {
  description: 'A person given inline: name required; email, phone (E.164), locale, phone channel optional.',
  fields: (t) => ({
    name: t.string({ required: true }),
    email: t.string({ required: false }),
    phone: t.string({ required: false, description: 'E.164, e.g. +905551234567.' }),
    locale: t.field({ type: LocaleEnum, required: false }),
    phoneContactMethod: t.field({ type: PhoneContactMethodEnum, required: false }),
    embedded: t.boolean({
      required: false,
      description:
        'true: the person signs inside your application through createSigningUrl, and is sent no invitation, reminder or “your turn” message (the final copy and notices still go to its email).',
    }),
  }),
});

export const AgentInput = builder.inputType('AgentInput', {
  description: 'Exactly one of info, contactId, groupId, userId.',
  fields: (t) => ({
    info: t.field({ type: AgentInfoInput, required: false }),
    contactId: t.id({ required: false }),
    groupId: t.id({ required: false }),
    userId: t.id({ required: false }),
  }),
});

/**
 * The input fields every recipient input has (an envelope's recipient, a template's role): all
 * required keys required and the defaults described when adding, all optional when changing.
 */
export function recipientKeyInputs(t: PothosSchemaTypes.InputFieldBuilder<Types, 'InputObject'>, mode: 'add' | 'update', noun: 'recipient' | 'role') {
  const adding = mode === 'add';
  const described = (description: string) => (adding ? { description } : {});
  return {
    type: t.field({ type: RecipientTypeEnum, required: adding }),
    identifier: t.string({ required: adding }),
    roleName: t.string({ required: adding }),
    order: t.int({ required: false, ...described('Default 0.') }),
    required: t.boolean({ required: false, ...described('Default true.') }),
    quorum: t.int({ required: false, ...described('An approver only: distinct agents that must approve, 1 to the number of agents. Default 1.') }),
    signatureLevel: t.field({
      type: SignatureLevelEnum,
      required: false,
      ...described('A signer only: advanced or qualified needs a team trust service offering it (else Request.Invalid, Recipient.TrustServiceUnavailable). Default simple.'),
    }),
    trustServiceId: t.string({ required: false, ...described('The team’s trust service (settings trustServices[].id); default: the first offering the level.') }),
    color: t.string({ required: false, ...described(`#RRGGBB; a distinct default per ${noun}.`) }),
    hostedById: t.id({ required: false, ...described(`For an in_person_signer: the host ${noun}.`) }),
    delegatedById: t.id({ required: false }),
  };
}

const AddRecipientInput = builder.inputType('AddRecipientInput', {
  description: 'A recipient role (REST body: { recipient: {...} }).',
  fields: (t) => ({
    ...recipientKeyInputs(t, 'add', 'recipient'),
    agents: t.field({ type: [AgentInput], required: false }),
  }),
});

const UpdateRecipientInput = builder.inputType('UpdateRecipientInput', {
  description: 'Only the given keys change; agents, when given, replace all agents. hostedById/delegatedById null clears them.',
  fields: (t) => ({
    ...recipientKeyInputs(t, 'update', 'recipient'),
    agents: t.field({ type: [AgentInput], required: false }),
  }),
});

/**
 * The recipient mutations of an owner (an envelope's addRecipient, updateRecipient,
 * deleteRecipient; a template's addTemplateRecipient, …): one set of resolvers, registered for
 * each owner with its recipient type, its inputs and the keys whose null clears them.
 */
export function recipientMutations(
  owner: GraphqlOwner,
  options: {
    type: ObjectRef<Types, RecipientCoreData>;
    addInput: InputObjectRef<Types, object>;
    updateInput: InputObjectRef<Types, object>;
    clearedByNull: string[];
    descriptions: { add: string; update: string; delete: string };
  },
) {
  const inputOf = (input: object) => withoutNulls(input, { keepNull: ['hostedById', 'delegatedById', ...options.clearedByNull] }) as Record<string, unknown>;
  builder.mutationFields((t) => ({
    [ownerMutationName(owner, 'add', 'Recipient')]: t.field({
      type: options.type,
      nullable: true,
      description: options.descriptions.add,
      args: { ...ownerIdArg(owner, t.arg.id({ required: true })), input: t.arg({ type: options.addInput, required: true }) },
      resolve: (_root, args, context) => addRecipient(context, { owner: ownerOfArgs(owner, args), input: inputOf(args.input), idempotencyKey: context.idempotencyKey }),
    }),
    [ownerMutationName(owner, 'update', 'Recipient')]: t.field({
      type: options.type,
      nullable: true,
      description: options.descriptions.update,
      args: {
        ...ownerIdArg(owner, t.arg.id({ required: true })),
        recipientId: t.arg.id({ required: true }),
        input: t.arg({ type: options.updateInput, required: true }),
      },
      resolve: (_root, args, context) => updateRecipient(context, { owner: ownerOfArgs(owner, args), recipientId: String(args.recipientId), input: inputOf(args.input) }),
    }),
    [ownerMutationName(owner, 'delete', 'Recipient')]: t.field({
      type: DeletedPayload,
      nullable: true,
      description: options.descriptions.delete,
      args: { ...ownerIdArg(owner, t.arg.id({ required: true })), recipientId: t.arg.id({ required: true }) },
      resolve: async (_root, args, context) => {
        await deleteRecipient(context, { owner: ownerOfArgs(owner, args), recipientId: String(args.recipientId) });
        return { id: String(args.recipientId) };
      },
    }),
  }));
}

recipientMutations(GRAPHQL_OWNERS.envelope, {
  type: RecipientTypeRef,
  addInput: AddRecipientInput,
  updateInput: UpdateRecipientInput,
  clearedByNull: [],
  descriptions: {
    add: 'Adds a recipient role to a draft (REST: POST /envelopes/{id}/recipients). Honours the Idempotency-Key header. On a sent envelope it is a correction (moves revision, records envelope.corrected; the recipient is invited if its turn has come): its order may not come before a recipient that has acted (Recipient.AlreadyCompleted).',
    update:
      'Changes a recipient of a draft (REST: PATCH /envelopes/{id}/recipients/{recipientId}). On a sent envelope it is a correction (moves revision, records envelope.corrected): refused for a recipient that has acted (completed, or approved) with Recipient.AlreadyCompleted. Replaced agents’ links die; the new people are invited on the recipient’s turn.',
    delete:
      'Removes a recipient and its fields from a draft (REST: DELETE /envelopes/{id}/recipients/{recipientId}). On a sent envelope it is a correction (moves revision, records envelope.corrected): refused for a recipient that has acted (completed, or approved) with Recipient.AlreadyCompleted. The turn moves on.',
  },
});

builder.queryField('recipient', (t) =>
  t.field({
    type: RecipientTypeRef,
    args: { envelopeId: t.arg.id({ required: true }), recipientId: t.arg.id({ required: true }) },
    resolve: (_root, args, context) => readRecipient(context, { owner: { kind: 'envelope', id: String(args.envelopeId) }, recipientId: String(args.recipientId) }),
  }),
);
