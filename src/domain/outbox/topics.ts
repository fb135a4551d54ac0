/**
 * Every topic of the one durable queue, and the payload each carries. The contract between the
 * features that enqueue (the workflow, one-time codes, webhooks) and the handlers that run them
 * (mail and SMS, sealing, webhook delivery), kept here so neither side imports the other.
 *
 * A payload is plain JSON. A part a handler must not keep once it has delivered it (a signing
 * link, a one-time code) sits under `secret`, which the acknowledgement drops (outbox.ts).
 */

/** The person a message goes to, as the send-time snapshot of an agent names them. */
export type Addressee = { name: string | null; email: string | null; phone: string | null; locale: string | null };

/** How a person is reached: by mail, by phone (SMS or WhatsApp), or not at all (an in-person signer without contact). */
export type MessageChannel = 'email' | 'sms' | 'whatsapp' | 'none';

export const OUTBOX_TOPICS = {
  /** A signing link to deliver; `secret.link` is removed by the deliverer once sent. */
  invitation: 'signing.invitation',
  /** A reminder with a fresh signing link (same payload as an invitation, `kind: 'reminder'`). */
  reminder: 'signing.reminder',
  /** Seal the finalized envelope's documents, then queue the final copy. */
  sealArtefacts: 'artefact.seal',
  /** Fix the certificate of completion of a voided or expired envelope (finalized ones: `artefact.seal`). */
  fixCertificate: 'artefact.certificate',
  /** Tell an invited person the envelope closed without finalizing (void, decline, expiry). */
  closedNotice: 'envelope.closed.notice',
  /** Tell a delegator that the role went to the person it named. */
  handoverNotice: 'recipient.handover.notice',
  /** Send every person of the envelope the final copy, once it is sealed (queued by the seal job). */
  completedNotice: 'envelope.completed.notice',
  /** A one-time passcode to text to a signer; `secret.code` is removed by the deliverer once sent. */
  signingOtp: 'signing.otp',
  /** POST one webhook delivery (`payload.deliveryId`); run by the webhook worker with its own retry policy. */
  webhookDelivery: 'webhook.delivery',
  /** Tell a team user that an endpoint was disabled after a delivery failed for good. */
  webhookDisabledNotice: 'webhook.disabled.notice',
  /** Tell one of a team's notification addresses about one of its envelopes (team settings, issue 24). */
  teamNotice: 'team.notice',
  /** Send the next few rows of a bulk send, then queue the next step (bulk-send.job.ts). */
  bulkSendStep: 'bulk_send.step',
  /** Send a scheduled envelope at its `sendAt` (scheduled-send.ts). */
  scheduledSend: 'envelope.scheduled_send',
  /** A public link's one-time code to mail to its visitor; `secret.code` is removed by the deliverer once sent. */
  publicLinkCode: 'public_link.code',
} as const;

export type OutboxTopic = (typeof OUTBOX_TOPICS)[keyof typeof OUTBOX_TOPICS];

export type InvitationPayload = {
  teamId: string;
  envelopeId: string;
  envelopeName: string;
  /** The first invitation, "your turn" after an earlier role, a reminder, or a hand-over by delegation. */
  kind: 'invitation' | 'your_turn' | 'reminder' | 'delegated';
  /** The reminder window (reminders only). */
  window?: string;
  /** The delegator's name (delegated only). */
  from?: string | null;
  recipientId: string;
  roleName: string | null;
  /** The in-person signer a host is invited for. */
  hostFor: string | null;
  agentId: string;
  personIndex: number;
  tokenId: string;
  channel: MessageChannel;
  to: Addressee;
  expiresAt: string | null;
  secret: { link: string };
};

export type SealArtefactsPayload = { teamId: string; envelopeId: string };

export type ClosedNoticePayload = {
  teamId: string;
  envelopeId: string;
  status: 'voided' | 'expired';
  cause: 'void' | 'decline' | 'expiry';
  reason: string | null;
  recipientId: string;
  agentId: string;
  to: Addressee;
};

export type HandoverNoticePayload = {
  teamId: string;
  envelopeId: string;
  kind: 'handed_over';
  recipientId: string;
  agentId: string;
  handedTo: string;
  channel: MessageChannel;
  to: Addressee;
};

export type CompletedNoticePayload = {
  teamId: string;
  envelopeId: string;
  kind: 'completed';
  recipientId: string;
  agentId: string;
  personIndex: number;
  channel: MessageChannel;
  to: Addressee;
};

export type SigningOtpPayload = {
  teamId: string;
  envelopeId: string;
  recipientId: string;
  agentId: string;
  personIndex: number;
  tokenId: string;
  otpId: string;
  channel: MessageChannel;
  to: { name: string | null; phone: string | null; locale: string | null };
  expiresAt: string;
  secret: { code: string };
};

export type WebhookDeliveryPayload = { teamId: string; deliveryId: string };

export type WebhookDisabledNoticePayload = {
  teamId: string;
  webhookId: string;
  url: string;
  reason: string;
  to: { name: string | null; email: string | null; locale: string | null };
};

/** What a team's notice is about; a delivery failure names the person, the channel and why. */
export type TeamNoticePayload = {
  teamId: string;
  /** The envelope the notice is about; null for a bulk send's. */
  envelopeId: string | null;
  event: 'completed' | 'declined' | 'voided' | 'expired' | 'delivery_failed' | 'send_failed' | 'bulk_send_completed';
  /** bulk_send_completed: the bulk send and its counts. */
  bulkSend?: { id: string; name: string | null; total: number; sent: number; failed: number } | null;
  to: { email: string; locale: string | null };
  /** The void or decline reason. */
  reason?: string | null;
  /** Who declined (declined), or whom a message did not reach (delivery_failed). */
  person?: { name: string | null; email: string | null; phone: string | null } | null;
  /** delivery_failed: the channel, what the message was, and why it failed (in words). */
  channel?: string | null;
  kind?: string | null;
  error?: string | null;
};

/** One step of a bulk send's job: its next rows. */
export type BulkSendStepPayload = { teamId: string; bulkSendId: string };

/** A scheduled send: the envelope, the time it was scheduled for, and the API key that scheduled it (the send's actor). */
export type ScheduledSendPayload = { teamId: string; workspaceId: string; apiKeyId: string; envelopeId: string; sendAt: string };

/** A visitor's code (public links, issue 36): the form's name and whom to mail it to. */
export type PublicLinkCodePayload = {
  teamId: string;
  publicLinkId: string;
  visitId: string;
  formName: string;
  to: { name: string; email: string; locale: string };
  expiresAt: string;
  secret: { code: string };
};

/** The payload each topic carries. */
export type OutboxPayloads = {
  'signing.invitation': InvitationPayload;
  'signing.reminder': InvitationPayload;
  'artefact.seal': SealArtefactsPayload;
  'artefact.certificate': SealArtefactsPayload;
  'envelope.closed.notice': ClosedNoticePayload;
  'recipient.handover.notice': HandoverNoticePayload;
  'envelope.completed.notice': CompletedNoticePayload;
  'signing.otp': SigningOtpPayload;
  'webhook.delivery': WebhookDeliveryPayload;
  'webhook.disabled.notice': WebhookDisabledNoticePayload;
  'team.notice': TeamNoticePayload;
  'bulk_send.step': BulkSendStepPayload;
  'envelope.scheduled_send': ScheduledSendPayload;
  'public_link.code': PublicLinkCodePayload;
};

// Every topic has its payload type, and nothing else does.
true satisfies OutboxTopic extends keyof OutboxPayloads ? (keyof OutboxPayloads extends OutboxTopic ? true : false) : false;
