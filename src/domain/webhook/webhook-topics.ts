/** Outbox topics of webhooks (a leaf module: the audit service enqueues, main.ts wires the workers). */
export const WEBHOOK_TOPICS = {
  /** POST one webhook delivery (`payload.deliveryId`); run by the webhook worker with its own retry policy. */
  delivery: 'webhook.delivery',
  /** Tell a team user that an endpoint was disabled after a delivery failed for good. */
  disabledNotice: 'webhook.disabled.notice',
} as const;

/**
 * The audit event types an endpoint may subscribe to (contract §5 and the ones added since):
 * every type the service records. `eventTypes: []` subscribes to all of them, including types
 * added later.
 */
export const WEBHOOK_EVENT_TYPES = [
  'envelope.created',
  'envelope.updated',
  'envelope.deleted',
  'envelope.sent',
  'envelope.finalized',
  'envelope.voided',
  'envelope.expired',
  'document.added',
  'document.updated',
  'document.removed',
  'recipient.added',
  'recipient.updated',
  'recipient.removed',
  'recipient.activated',
  'recipient.completed',
  'recipient.declined',
  'recipient.delegated',
  'field.added',
  'field.updated',
  'field.removed',
  'field.submitted',
  'invitation.queued',
  'invitation.sent',
  'reminder.queued',
  'reminder.sent',
  'notice.sent',
  'notification.failed',
  'notification.capped',
  'signing.viewed',
  'signing.hosted',
  'otp.requested',
  'otp.sent',
  'otp.verified',
  'otp.failed',
  'artefact.sealed',
  'artefact.downloaded',
  'template.created',
  'template.updated',
  'template.deleted',
  'contact.created',
  'contact.updated',
  'contact.removed',
  'contact_group.created',
  'contact_group.updated',
  'contact_group.removed',
  'contact_group.member_added',
  'contact_group.member_removed',
  'user.created',
  'user.updated',
  'user.removed',
] as const;
