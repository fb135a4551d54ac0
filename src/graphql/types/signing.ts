import { type EnvelopeData, readEnvelope } from '../../domain/envelope/envelope.read.ts';
import type { SigningOtpStatus } from '../../domain/notification/otp-policy.ts';
import type { DocumentData } from '../../domain/owner/owner.read.ts';
import { advanceSandboxClock, voidEnvelope } from '../../domain/signing/closing.service.ts';
import { type RemindedData, type ResentData, remindEnvelope, resendInvitation } from '../../domain/signing/nudge.service.ts';
import { requestSigningOtp, type SigningOtpRequest, verifySigningOtp } from '../../domain/signing/otp.service.ts';
import { cancelScheduledSend } from '../../domain/signing/scheduled-send.ts';
import { dryRunSend, type PlannedInvitation, type SendDryRun, type SendPlan, sendEnvelope } from '../../domain/signing/send.service.ts';
import type { SigningApprovalData, SigningCompletedFieldData, SigningRoleData, SigningSessionData, SigningTrustSignatureData } from '../../domain/signing/signing.read.ts';
import { approveSigning, declineSigning, delegateSigning, openSigningSession, startHostedSigning, submitSigning } from '../../domain/signing/signing.service.ts';
import { createSigningUrl, type SigningUrlData } from '../../domain/signing/signing-url.service.ts';
import { builder } from '../builder.ts';
import { withoutNulls } from '../input.ts';
import { envelopeIncludeOf, selectionOf } from '../selection.ts';
import { PageType } from './document.ts';
import { EnvelopeStatusEnum, EnvelopeType } from './envelope.ts';
import { FieldType } from './field.ts';
import { LocaleEnum, RecipientTypeEnum } from './recipient.ts';

const RemindedType = builder.objectRef<RemindedData>('Reminded').implement({
  description: 'One person reminded: the recipient, the agent and how it was reached.',
  fields: (t) => ({
    recipientId: t.exposeID('recipientId'),
    agentId: t.exposeID('agentId'),
    channel: t.exposeString('channel', { description: 'email, sms, whatsapp (none: the person has no address).' }),
  }),
});

const SendProblemType = builder.objectRef<SendDryRun['problems'][number]>('SendProblem').implement({
  description: 'A reason the send would be refused: exactly the error (name, description, context) the send would answer.',
  fields: (t) => ({
    name: t.exposeString('name'),
    description: t.exposeString('description'),
    context: t.field({ type: 'JSONObject', resolve: (problem) => problem.context }),
  }),
});

const PlannedInvitationType = builder.objectRef<PlannedInvitation>('PlannedInvitation').implement({
  description: 'One person a turn would reach.',
  fields: (t) => ({
    recipientId: t.exposeID('recipientId'),
    identifier: t.exposeString('identifier'),
    type: t.field({ type: RecipientTypeEnum, resolve: (invitation) => invitation.type }),
    channel: t.exposeString('channel', { description: 'email, sms, whatsapp, none (no address), or embedded (signs in your application; nothing is sent).' }),
    to: t.string({ nullable: true, description: 'The address the invitation goes to (null for none and embedded).', resolve: (invitation) => invitation.to }),
  }),
});

const PlannedReminderType = builder.objectRef<SendPlan['reminders'][number]>('PlannedReminder').implement({
  description: 'A reminder window of a first-turn recipient (sent only if it has not completed by then).',
  fields: (t) => ({
    window: t.exposeString('window', { description: 'n1, n2, … or expiry.' }),
    at: t.field({ type: 'DateTime', resolve: (reminder) => reminder.at }),
  }),
});

const SendPlanType = builder.objectRef<SendPlan>('SendPlan').implement({
  description: 'What the send would do.',
  fields: (t) => ({
    turns: t.field({
      type: t.listRef(t.listRef(PlannedInvitationType)),
      description: 'The turns in the order they would start (the first at the send); a host stands for its in-person signers.',
      resolve: (plan) => plan.turns,
    }),
    messages: t.field({ type: 'JSONObject', description: 'The invitations the send would queue (the first turn’s), counted by channel: { "email": 2 }.', resolve: (plan) => plan.messages }),
    expiresAt: t.field({ type: 'DateTime', resolve: (plan) => plan.expiresAt }),
    reminders: t.field({ type: [PlannedReminderType], resolve: (plan) => plan.reminders }),
  }),
});

const SendDryRunType = builder.objectRef<SendDryRun>('SendDryRun').implement({
  description: 'A send checked and planned without sending (sendEnvelope(dryRun: true), jumpstartEnvelope(dryRun: true)); nothing changed.',
  fields: (t) => ({
    wouldSend: t.exposeBoolean('wouldSend'),
    problems: t.field({
      type: [SendProblemType],
      description:
        'Every reason the send would be refused now, in the order it checks them (the send refuses with the first); a draft’s content problems are all in one Envelope.NotSendable (context.issues).',
      resolve: (dryRun) => dryRun.problems,
    }),
    plan: t.field({ type: SendPlanType, nullable: true, description: 'Null unless the envelope is a draft.', resolve: (dryRun) => dryRun.plan }),
  }),
});

/** An envelope answered by a dry run carries the dry run's result beside it. */
type EnvelopeAnswer = EnvelopeData & { dryRun?: SendDryRun };

builder.objectField(EnvelopeType, 'dryRun', (t) =>
  t.field({
    type: SendDryRunType,
    nullable: true,
    description: 'Only in the answer of sendEnvelope(dryRun: true) or jumpstartEnvelope(dryRun: true): what sending this envelope would do. Null everywhere else.',
    resolve: (envelope: EnvelopeAnswer) => envelope.dryRun ?? null,
  }),
);

// The sender's side of the workflow: send and void (REST: PUT /send, POST /void).
builder.mutationFields((t) => ({
  sendEnvelope: t.field({
    type: EnvelopeType,
    nullable: true,
    description:
      'Sends a draft (REST: PUT /envelopes/{id}/send): every check at once (Envelope.NotSendable lists them in context.issues), agents snapshotted, the first turn activated and its invitations queued. ' +
      'dryRun: true changes nothing and answers the envelope as it is, with `dryRun` set: every problem the send would refuse with, and its plan.',
    args: {
      id: t.arg.id({ required: true }),
      dryRun: t.arg.boolean({ required: false, defaultValue: false }),
      sendAt: t.arg({
        type: 'DateTime',
        required: false,
        description:
          'Send later: in the future, at most 90 days ahead. The draft is checked now (the same errors as a send) and becomes scheduled; cancelScheduledSend takes it back to draft.',
      }),
    },
    resolve: async (_root, args, context, info): Promise<EnvelopeAnswer> => {
      if (args.dryRun) {
        const dryRun = await dryRunSend(context, { envelopeId: String(args.id) });
        return { ...(await readEnvelope(context, String(args.id), envelopeIncludeOf(selectionOf(info)))), dryRun };
      }
      await sendEnvelope(context, { envelopeId: String(args.id), input: args.sendAt ? { sendAt: args.sendAt.toISOString() } : {} });
      return readEnvelope(context, String(args.id), envelopeIncludeOf(selectionOf(info)));
    },
  }),
  cancelScheduledSend: t.field({
    type: EnvelopeType,
    nullable: true,
    description: 'A scheduled envelope goes back to draft (REST: DELETE /envelopes/{id}/schedule); Envelope.NotScheduled otherwise.',
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_root, args, context, info) => {
      await cancelScheduledSend(context, { envelopeId: String(args.id) });
      return readEnvelope(context, String(args.id), envelopeIncludeOf(selectionOf(info)));
    },
  }),
  voidEnvelope: t.field({
    type: EnvelopeType,
    nullable: true,
    description: 'Voids a sent envelope (REST: POST /envelopes/{id}/void); documents become voided. A closed envelope gives Envelope.Closed.',
    args: { id: t.arg.id({ required: true }), reason: t.arg.string({ required: false, description: 'At most 500 characters.' }) },
    resolve: async (_root, args, context, info) => {
      await voidEnvelope(context, { envelopeId: String(args.id), input: args.reason == null ? {} : { reason: args.reason } });
      return readEnvelope(context, String(args.id), envelopeIncludeOf(selectionOf(info)));
    },
  }),
  createSigningUrl: t.field({
    type: builder.objectRef<SigningUrlData>('SigningUrl').implement({
      description: 'A one-use signing URL for embedded signing (REST: POST /envelopes/{id}/recipients/{rid}/signing-url).',
      fields: (f) => ({
        url: f.exposeString('url', { description: 'Opens the signing page once; show it with <envelope-signing url="…"> from /embed.js.' }),
        expiresAt: f.field({ type: 'DateTime', description: 'Unless opened by then, the URL stops working (5 minutes after it was made).', resolve: (made) => made.expiresAt }),
      }),
    }),
    nullable: true,
    description:
      'A URL that opens the signing page once (within 5 minutes) for a recipient whose turn it is, as the agent named (default: the role’s first). frameOrigin: the one origin that may frame that page (Signing.FrameOriginNotAllowed unless the team settings, or SIGNING_FRAME_ANCESTORS, allow it); returnUrl: where the page goes after completing, declining or delegating. Signing.NotYourTurn, Envelope.Closed, Envelope.NotSent otherwise.',
    args: {
      envelopeId: t.arg.id({ required: true }),
      recipientId: t.arg.id({ required: true }),
      agentId: t.arg.id({ required: false }),
      returnUrl: t.arg.string({ required: false, description: 'https (http only on localhost); ?event=signing_complete|declined|delegated|session_expired&envelopeId=… is added.' }),
      frameOrigin: t.arg.string({ required: false, description: 'https://host[:port], or http://localhost[:port] for development.' }),
      locale: t.arg({ type: LocaleEnum, required: false }),
    },
    resolve: (_root, args, context) =>
      createSigningUrl(context, {
        envelopeId: String(args.envelopeId),
        recipientId: String(args.recipientId),
        input: withoutNulls({ agentId: args.agentId == null ? null : String(args.agentId), returnUrl: args.returnUrl, frameOrigin: args.frameOrigin, locale: args.locale }),
      }),
  }),
  remindEnvelope: t.field({
    type: builder.objectRef<{ reminded: RemindedData[] }>('RemindResult').implement({
      description: 'Who was reminded.',
      fields: (f) => ({ reminded: f.field({ type: [RemindedType], resolve: (result) => result.reminded }) }),
    }),
    nullable: true,
    description:
      'Reminds now every person whose turn it is and who has not completed (REST: POST /envelopes/{id}/remind); approvers’ agents that approved and embedded people are skipped. At most once an hour per envelope (Envelope.RemindTooSoon with context.retryAfterSeconds).',
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, context) => remindEnvelope(context, { envelopeId: String(args.id) }),
  }),
  resendInvitation: t.field({
    type: builder.objectRef<ResentData>('ResentInvitation').implement({
      description: 'The invitation sent again.',
      fields: (f) => ({
        recipientId: f.exposeID('recipientId'),
        agentId: f.exposeID('agentId'),
        channel: f.exposeString('channel', { description: 'email, sms, whatsapp (none: the person has no address).' }),
        revokedLinks: f.exposeInt('revokedLinks', { description: 'How many earlier links died.' }),
      }),
    }),
    nullable: true,
    description:
      'Sends an agent’s invitation again (REST: POST /envelopes/{id}/recipients/{rid}/resend), optionally to a corrected email or phone: the old links die (Signing.InvalidToken), a new one is sent. Signing.EmbeddedAgent for an embedded person; Signing.AlreadyApproved for an approver’s agent that already approved; Envelope.RemindTooSoon for the same address within an hour.',
    args: {
      envelopeId: t.arg.id({ required: true }),
      recipientId: t.arg.id({ required: true }),
      agentId: t.arg.id({ required: false }),
      email: t.arg.string({ required: false }),
      phone: t.arg.string({ required: false, description: 'E.164, e.g. +905551234567.' }),
    },
    resolve: (_root, args, context) =>
      resendInvitation(context, {
        envelopeId: String(args.envelopeId),
        recipientId: String(args.recipientId),
        input: withoutNulls({ agentId: args.agentId == null ? null : String(args.agentId), email: args.email, phone: args.phone }),
      }),
  }),
  advanceSandboxClock: t.field({
    type: builder.objectRef<{ now: string; expiredEnvelopes: number }>('SandboxClock').implement({
      description: 'The service clock after moving it, and what fell due.',
      fields: (f) => ({
        now: f.field({ type: 'DateTime', resolve: (clock) => clock.now }),
        expiredEnvelopes: f.exposeInt('expiredEnvelopes', { description: 'Envelopes that expired because of this move.' }),
      }),
    }),
    nullable: true,
    description: 'Moves the service clock forward; due expiries fire before the answer (REST: POST /sandbox/clock). Only with SANDBOX_CLOCK=true, else Sandbox.Disabled.',
    args: { seconds: t.arg.int({ required: true }) },
    resolve: (_root, args, context) => advanceSandboxClock(context, { input: { seconds: args.seconds } }),
  }),
}));

// The recipient side (docs/reference/contract.md §7): authorised by X-Signing-Token, never by a team key.

const SigningDocumentType = builder.objectRef<DocumentData>('SigningDocument').implement({
  description: 'A document as a signer sees it: name, order and page sizes.',
  fields: (t) => ({
    id: t.exposeID('id'),
    name: t.exposeString('name'),
    order: t.exposeInt('order'),
    pageCount: t.exposeInt('pageCount'),
    pages: t.field({ type: [PageType], resolve: (document) => document.pages }),
  }),
});

const SigningRoleType = builder.objectRef<SigningRoleData>('SigningRole').implement({
  description: 'A recipient role as the signing page shows it.',
  fields: (t) => ({
    id: t.exposeID('id'),
    identifier: t.exposeString('identifier'),
    roleName: t.exposeString('roleName'),
    type: t.exposeString('type', { description: 'signer, host, in_person_signer, delegator or viewer.' }),
    order: t.exposeInt('order'),
    required: t.exposeBoolean('required'),
    color: t.exposeString('color', { description: 'The recipient’s colour (#rrggbb), for its fields on the signing page.' }),
    activatedAt: t.field({ type: 'DateTime', nullable: true, resolve: (role) => role.activatedAt }),
    completedAt: t.field({ type: 'DateTime', nullable: true, resolve: (role) => role.completedAt }),
    delegatedAt: t.field({ type: 'DateTime', nullable: true, resolve: (role) => role.delegatedAt }),
    declinedAt: t.field({ type: 'DateTime', nullable: true, resolve: (role) => role.declinedAt }),
    personName: t.string({
      nullable: true,
      description: 'The person in the role (its current agent’s first person), when named: who an in-person screen asks for.',
      resolve: (role) => role.personName,
    }),
  }),
});

const SigningCompletedFieldType = builder.objectRef<SigningCompletedFieldData>('SigningCompletedField').implement({
  description: 'A field an earlier signer completed, shown read only on later signers’ pages.',
  fields: (t) => ({
    field: t.field({ type: FieldType, resolve: (completed) => completed }),
    color: t.exposeString('color', { description: 'The colour (#rrggbb) of the role that gave it.' }),
    signerName: t.exposeString('signerName', { description: 'Who gave it: the role’s person, else the role’s name.' }),
  }),
});

const SigningEnvelopeType = builder.objectRef<SigningSessionData['envelope']>('SigningEnvelope').implement({
  description: 'The envelope a signing link belongs to.',
  fields: (t) => ({
    id: t.exposeID('id'),
    name: t.exposeString('name'),
    status: t.field({ type: EnvelopeStatusEnum, resolve: (envelope) => envelope.status }),
    sentAt: t.field({ type: 'DateTime', nullable: true, resolve: (envelope) => envelope.sentAt }),
    revision: t.exposeInt('revision', {
      description:
        'The envelope’s revision as this session read it: 0 at send, one more per correction by the sender. Submit it back (submitSigning(revision)) so a submission made on an older one is refused with Signing.EnvelopeChanged.',
    }),
    expiresAt: t.field({ type: 'DateTime', nullable: true, resolve: (envelope) => envelope.expiresAt }),
    completedAt: t.field({ type: 'DateTime', nullable: true, resolve: (envelope) => envelope.completedAt }),
  }),
});

const SigningSenderType = builder.objectRef<SigningSessionData['sender']>('SigningSender').implement({
  description: 'The sending team as the signing page shows it (its team settings).',
  fields: (t) => ({
    displayName: t.string({ nullable: true, resolve: (sender) => sender.displayName }),
    logoUrl: t.string({ nullable: true, description: 'The team’s logo on this service (a path on the same origin).', resolve: (sender) => sender.logoUrl }),
    accentColor: t.string({ nullable: true, description: '#rrggbb', resolve: (sender) => sender.accentColor }),
    footer: t.string({ nullable: true, resolve: (sender) => sender.footer }),
    declineNotified: t.exposeBoolean('declineNotified', { description: 'Whether declining mails the sending team (its notification settings ask for declines).' }),
  }),
});

const SigningApprovalType = builder.objectRef<SigningApprovalData>('SigningApproval').implement({
  description: 'An approver role’s progress: it completes when quorum distinct agents approved.',
  fields: (t) => ({
    quorum: t.exposeInt('quorum'),
    approvals: t.exposeInt('approvals', { description: 'Distinct agents who approved so far.' }),
    approvedByMe: t.exposeBoolean('approvedByMe', { description: 'This link’s agent approved.' }),
  }),
});

const SigningTrustSignatureErrorType = builder.objectRef<NonNullable<SigningTrustSignatureData['error']>>('SigningTrustSignatureError').implement({
  description: 'Why the last attempt at the trust service failed (Signing.TrustServiceFailed): finish again to retry, the values are saved.',
  fields: (t) => ({
    name: t.exposeString('name'),
    reason: t.exposeString('reason', { description: 'unreachable, timeout, refused, invalid_response, declined, certificate_revoked, not_configured, values_changed or envelope_changed.' }),
    message: t.exposeString('message'),
    providerSaid: t.string({
      nullable: true,
      description: 'The provider’s own words (its error_description), when it gave them: for a page to quote in its own language.',
      resolve: (error) => error.providerSaid ?? null,
    }),
  }),
});

const SigningTrustSignatureType = builder.objectRef<SigningTrustSignatureData>('SigningTrustSignature').implement({
  description: 'A signer’s advanced or qualified signature at its trust service (docs/artefacts.md, “Signature levels”).',
  fields: (t) => ({
    level: t.exposeString('level', { description: 'advanced or qualified.' }),
    trustServiceId: t.exposeString('trustServiceId', { nullable: true }),
    status: t.exposeString('status', { description: 'not_started, authorizing (at the provider, or the documents being prepared), signing, signed or failed.' }),
    error: t.field({ type: SigningTrustSignatureErrorType, nullable: true, resolve: (signature) => signature.error }),
    authorizeUrl: t.string({
      nullable: true,
      description: 'Answered by the submitSigning that finished: the provider’s authorization page to send the browser to. Null otherwise.',
      resolve: (signature) => signature.authorizeUrl,
    }),
  }),
});

const SigningSessionType = builder.objectRef<SigningSessionData>('SigningSession').implement({
  description: 'What one signing link may see: the envelope, its documents, this recipient’s fields, and whose turn it is.',
  fields: (t) => ({
    envelope: t.field({ type: SigningEnvelopeType, resolve: (session) => session.envelope }),
    recipient: t.field({ type: SigningRoleType, resolve: (session) => session.recipient }),
    signerName: t.exposeString('signerName', { description: 'The person this link belongs to.' }),
    sender: t.field({ type: SigningSenderType, resolve: (session) => session.sender }),
    locale: t.string({ nullable: true, description: 'The person’s locale (en-US or tr-TR) when the sender gave one: the signing page’s language.', resolve: (session) => session.locale }),
    documents: t.field({ type: [SigningDocumentType], resolve: (session) => session.documents }),
    fields: t.field({ type: [FieldType], description: 'This recipient’s fields, with views and current values.', resolve: (session) => session.fields }),
    completedFields: t.field({
      type: [SigningCompletedFieldType],
      description: 'Fields of roles that completed (earlier signers), with their values: read only.',
      resolve: (session) => session.completedFields,
    }),
    isMyTurn: t.exposeBoolean('isMyTurn', { description: 'Whether this recipient may submit now.' }),
    isExpired: t.exposeBoolean('isExpired'),
    requiredFieldIds: t.idList({ description: 'Required fields of this recipient that have no value yet.', resolve: (session) => session.requiredFieldIds }),
    activeRecipients: t.field({ type: [SigningRoleType], description: 'The roles whose turn it is now.', resolve: (session) => session.activeRecipients }),
    hostedSigners: t.field({ type: [SigningRoleType], description: 'For a host: the in-person signers it hosts.', resolve: (session) => session.hostedSigners }),
    approval: t.field({ type: SigningApprovalType, nullable: true, description: 'For an approver: its quorum and approvals; null for other roles.', resolve: (session) => session.approval }),
    trustSignature: t.field({
      type: SigningTrustSignatureType,
      nullable: true,
      description: 'For a signer whose signatureLevel is advanced or qualified: where its signature at the trust service stands. Null for a simple signature.',
      resolve: (session) => session.trustSignature,
    }),
  }),
});

const SigningValueInput = builder.inputType('SigningValueInput', {
  description: 'A value for one of your fields (shapes per type in docs/fields.md); null clears it.',
  fields: (t) => ({
    fieldId: t.id({ required: true }),
    value: t.field({ type: 'JSONObject', required: false }),
  }),
});

const SigningPersonInput = builder.inputType('SigningPersonInput', {
  description: 'The person a delegator hands its role to: a name, and an email and/or a phone (E.164).',
  fields: (t) => ({
    name: t.string({ required: true }),
    email: t.string({ required: false }),
    phone: t.string({ required: false }),
    locale: t.string({ required: false, description: 'en-US or tr-TR.' }),
    phoneContactMethod: t.string({ required: false, description: 'sms or whatsapp.' }),
  }),
});

const DelegationType = builder.objectRef<{ recipientId: string; delegatedAt: string }>('Delegation').implement({
  description: 'A role handed on: the new person has been invited; this link no longer works.',
  fields: (t) => ({
    recipientId: t.exposeID('recipientId'),
    delegatedAt: t.field({ type: 'DateTime', resolve: (delegation) => delegation.delegatedAt }),
  }),
});

const HostedSigningType = builder.objectRef<{ recipientId: string; token: string }>('HostedSigning').implement({
  description: 'A link for an in-person signer on the host’s device: send it as X-Signing-Token to act as that signer.',
  fields: (t) => ({
    recipientId: t.exposeID('recipientId'),
    token: t.exposeString('token'),
  }),
});

builder.queryField('signingSession', (t) =>
  t.field({
    type: SigningSessionType,
    description: 'The session of the signing link in X-Signing-Token. The first open of a link records signing.viewed.',
    resolve: (_root, _args, context) => openSigningSession(context),
  }),
);

builder.mutationFields((t) => ({
  submitSigning: t.field({
    type: SigningSessionType,
    nullable: true,
    description:
      'Saves values for your fields; with complete: true also completes your role (every required field must have a value). For a signer whose signatureLevel is advanced or qualified, complete saves the values and answers trustSignature.authorizeUrl: the role completes when the trust service’s signature is embedded (Signing.TrustServiceFailed when the provider does not answer).',
    args: {
      values: t.arg({ type: [SigningValueInput], required: false }),
      complete: t.arg.boolean({ required: false }),
      consent: t.arg.string({
        required: false,
        description: 'With complete: the statement the signer agreed to (at most 2000 characters), recorded in the recipient.completed audit event.',
      }),
      revision: t.arg.int({
        required: false,
        description: 'The envelope revision the page loaded (signingSession.envelope.revision). When the sender has corrected the envelope since, nothing is saved: Signing.EnvelopeChanged.',
      }),
    },
    resolve: (_root, args, context) =>
      submitSigning(context, {
        input: {
          values: (args.values ?? []).map((entry) => ({ fieldId: String(entry.fieldId), value: entry.value ?? null })),
          complete: args.complete ?? false,
          ...(args.consent == null ? {} : { consent: args.consent }),
          ...(args.revision == null ? {} : { revision: args.revision }),
        },
      }),
  }),
  declineSigning: t.field({
    type: SigningSessionType,
    nullable: true,
    description: 'Declines to sign: the envelope is voided and its documents declined.',
    args: { reason: t.arg.string({ required: true, description: '1–500 characters.' }) },
    resolve: (_root, args, context) => declineSigning(context, { input: { reason: args.reason } }),
  }),
  approveSigning: t.field({
    type: SigningSessionType,
    nullable: true,
    description:
      'For an approver: approves on the role’s turn (to reject, declineSigning). The role completes when quorum distinct agents approved; the agents left over then get Signing.RoleCompleted.',
    args: { comment: t.arg.string({ required: false, description: 'At most 2000 characters, kept in the audit trail and the certificate.' }) },
    resolve: (_root, args, context) => approveSigning(context, { input: args.comment == null ? {} : { comment: args.comment } }),
  }),
  delegateSigning: t.field({
    type: DelegationType,
    nullable: true,
    description: 'For a delegator: hands the role to another person, who is invited; this link stops working.',
    args: { person: t.arg({ type: SigningPersonInput, required: true }) },
    resolve: (_root, args, context) => delegateSigning(context, { input: { person: withoutNulls(args.person) } }),
  }),
  startHostedSigning: t.field({
    type: HostedSigningType,
    nullable: true,
    description: 'For a host: a link for one hosted in-person signer whose turn it is, to sign on this device.',
    args: { recipientId: t.arg.id({ required: true }) },
    resolve: (_root, args, context) => startHostedSigning(context, { recipientId: String(args.recipientId) }),
  }),
}));

// One-time passcodes for signers with a phone (docs/reference/contract.md §7; domain/signing/otp.service.ts).

const SigningOtpStatusType = builder.objectRef<SigningOtpStatus>('SigningOtpStatus').implement({
  description: 'Whether this link needs a one-time code sent to its person’s phone before submitting, declining or delegating, and whether one was verified.',
  fields: (t) => ({
    required: t.exposeBoolean('required', { description: 'The person has a phone: a verified code is needed to act.' }),
    verified: t.exposeBoolean('verified', { description: 'A code was verified on this link and the verification still holds.' }),
    verifiedUntil: t.field({ type: 'DateTime', nullable: true, resolve: (status) => status.verifiedUntil }),
    maskedPhone: t.string({ nullable: true, description: 'The phone the code goes to, mostly hidden (e.g. +90•••••••12).', resolve: (status) => status.maskedPhone }),
    channel: t.string({ nullable: true, description: 'sms or whatsapp.', resolve: (status) => status.channel }),
    resendAvailableAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'When the next code may be requested, while that is in the future.',
      resolve: (status) => status.resendAvailableAt,
    }),
    resendInSeconds: t.exposeInt('resendInSeconds', { description: 'Seconds until the next code may be requested (0: now); count down with this rather than the device clock.' }),
  }),
});

builder.objectField(SigningSessionType, 'otp', (t) => t.field({ type: SigningOtpStatusType, description: 'The link’s one-time code step.', resolve: (session) => session.otp }));

const SigningOtpRequestType = builder.objectRef<SigningOtpRequest>('SigningOtpRequest').implement({
  description: 'A code is on its way (the code itself is never answered).',
  fields: (t) => ({
    channel: t.exposeString('channel', { description: 'sms or whatsapp.' }),
    maskedPhone: t.exposeString('maskedPhone'),
    expiresAt: t.field({ type: 'DateTime', description: 'Until when the code can be entered.', resolve: (request) => request.expiresAt }),
    resendAvailableAt: t.field({ type: 'DateTime', description: 'When another code may be requested.', resolve: (request) => request.resendAvailableAt }),
    resendInSeconds: t.exposeInt('resendInSeconds', { description: 'Seconds until another code may be requested.' }),
  }),
});

builder.mutationFields((t) => ({
  requestSigningOtp: t.field({
    type: SigningOtpRequestType,
    nullable: true,
    description:
      'Sends a one-time code to the phone of this link’s person (SMS or WhatsApp), replacing any earlier code. Limited per person (Signing.OtpRateLimited, Signing.PhoneMessageCapReached).',
    resolve: (_root, _args, context) => requestSigningOtp(context),
  }),
  verifySigningOtp: t.field({
    type: SigningSessionType,
    nullable: true,
    description:
      'Checks the code (6 digits; spaces, dashes and fullwidth digits are read through; 5 tries per code); answers the session, now verified. A code verifies once: wrong, expired, used-up and already used codes are refused by name.',
    args: { code: t.arg.string({ required: true }) },
    resolve: (_root, args, context) => verifySigningOtp(context, { input: { code: args.code } }),
  }),
}));
