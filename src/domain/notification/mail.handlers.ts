/**
 * Outbox handlers that deliver the workflow's mails (invitation, your turn, closing notices).
 *
 * A message's Message-ID is its outbox row's id at the public host: the same on every delivery
 * of that row, so a mail sent again after a crash (between the send and the acknowledgement) is
 * recognisably the same mail. The audit event of a delivery (`invitation.sent`,
 * `notice.sent`) is written in the acknowledgement's transaction, so it is recorded once however
 * many times the work ran; the acknowledgement also drops the signing link from the row.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { appendAuditEvent } from '../audit/audit.service.ts';
import { OUTBOX_TOPICS } from '../signing/workflow.ts';
import { mailLocale, renderMail, renderShortText, type MailKind, type MailValues } from './mail-templates.ts';
import type { PhoneChannel, PhoneProvider } from './sms.ts';
import type { Mailer } from './mailer.ts';
import { PermanentOutboxError, type OutboxFailureHook, type OutboxHandler, type OutboxMessageClaim } from './outbox-worker.ts';

export type MailHandlerOptions = { mailer: Mailer; phone: PhoneProvider; publicUrl: string; auditKey: Buffer };

type Person = { name: string | null; email: string | null; phone: string | null; locale: string | null };

/** The Message-ID of an outbox row's mail (without angle brackets). */
export function mailMessageId(outboxId: string, publicUrl: string): string {
  return `${outboxId}@${new URL(publicUrl).hostname}`;
}

async function envelopeOf(em: EntityManager, envelopeId: string): Promise<{ name: string; teamId: string; status: string }> {
  const [row] = await em.execute<{ name: string; team_id: string; status: string }[]>('select name, team_id, status from envelope where id = ?', [envelopeId]);
  if (!row) throw new PermanentOutboxError(`envelope ${envelopeId} does not exist`);
  return { name: row.name, teamId: row.team_id, status: row.status };
}

type Delivery = { channel: 'email' | PhoneChannel; messageId: string };

/**
 * Delivers the message in its person's locale: by mail when the person has an email address,
 * else by SMS or WhatsApp (the invitation's `channel`, SMS for notices) when they have a phone.
 */
async function deliver(options: MailHandlerOptions, message: OutboxMessageClaim, kind: MailKind, values: Omit<MailValues, 'name'>): Promise<Delivery> {
  const person = message.payload.to as Person | undefined;
  const locale = mailLocale(person?.locale);
  const messageId = mailMessageId(message.id, options.publicUrl);
  if (person?.email) {
    const content = renderMail(kind, locale, { name: person.name, ...values });
    await options.mailer.send({ messageId, to: { name: person.name, address: person.email }, language: locale, ...content });
    return { channel: 'email', messageId };
  }
  if (person?.phone) {
    const channel: PhoneChannel = message.payload.channel === 'whatsapp' ? 'whatsapp' : 'sms';
    await options.phone.send({ messageId, to: person.phone, channel, text: renderShortText(kind, locale, { name: person.name, ...values }) });
    return { channel, messageId };
  }
  throw new PermanentOutboxError('the person has neither an email address nor a phone number');
}

async function systemEvent(em: EntityManager, auditKey: Buffer, input: { teamId: string; envelopeId: string; type: string; at: Date; details: Record<string, unknown> }): Promise<void> {
  await appendAuditEvent(em, auditKey, {
    teamId: input.teamId,
    envelopeId: input.envelopeId,
    type: input.type,
    actor: { type: 'system', id: null },
    request: null,
    details: input.details as never,
    at: input.at,
  });
  await em.flush();
}

/** `signing.invitation` (the first invitation with the send, or "your turn" for a later order) and `signing.reminder`. */
export function invitationMailHandler(options: MailHandlerOptions): OutboxHandler {
  return async (message, { em, now, logger }) => {
    const payload = message.payload as Record<string, unknown>;
    const envelopeId = String(payload.envelopeId);
    const envelope = await envelopeOf(em, envelopeId);
    const link = (payload.secret as { link?: string } | undefined)?.link;
    if (!link) throw new PermanentOutboxError('the invitation has no signing link');
    // A link that died before its mail went out (the envelope closed, the role was delegated
    // away) is not sent: the closing notice or the new person's invitation says what happened.
    // Nor is one to a recipient who has completed meanwhile (a reminder queued just before).
    const [token] = await em.execute<{ revoked_at: Date | null; completed_at: Date | null }[]>(
      'select t.revoked_at, r.completed_at from signing_token t join recipient r on r.id = t.recipient_id where t.id = ?',
      [String(payload.tokenId)],
    );
    if (!token || token.revoked_at !== null || token.completed_at !== null || envelope.status !== 'sent') {
      logger.info({ messageId: message.id, envelopeId }, 'invitation not sent: its link is no longer live or its recipient is done');
      return;
    }
    const kind: MailKind = payload.kind === 'your_turn' ? 'your_turn' : payload.kind === 'reminder' ? 'reminder' : 'invitation';
    const { channel, messageId } = await deliver(options, message, kind, { envelopeName: envelope.name, link, expiresAt: (payload.expiresAt as string | null) ?? null });
    return (tx) =>
      systemEvent(tx, options.auditKey, {
        teamId: envelope.teamId,
        envelopeId,
        type: kind === 'reminder' ? 'reminder.sent' : 'invitation.sent',
        at: now,
        details: {
          recipientId: payload.recipientId,
          agentId: payload.agentId,
          personIndex: payload.personIndex,
          tokenId: payload.tokenId,
          channel,
          kind,
          ...(kind === 'reminder' ? { window: payload.window } : {}),
          messageId,
        },
      });
  };
}

/** `envelope.closed.notice`: voided, declined or expired, to everyone who was invited. */
export function closedNoticeMailHandler(options: MailHandlerOptions): OutboxHandler {
  return async (message, { em, now }) => {
    const payload = message.payload as Record<string, unknown>;
    const envelopeId = String(payload.envelopeId);
    const envelope = await envelopeOf(em, envelopeId);
    const kind: MailKind = payload.cause === 'decline' ? 'declined' : payload.cause === 'expiry' || payload.status === 'expired' ? 'expired' : 'voided';
    const { channel, messageId } = await deliver(options, message, kind, { envelopeName: envelope.name, reason: (payload.reason as string | null) ?? null });
    return (tx) =>
      systemEvent(tx, options.auditKey, {
        teamId: envelope.teamId,
        envelopeId,
        type: 'notice.sent',
        at: now,
        details: { recipientId: payload.recipientId, channel, kind, messageId },
      });
  };
}

export function mailHandlers(options: MailHandlerOptions): Map<string, OutboxHandler> {
  return new Map([
    [OUTBOX_TOPICS.invitation, invitationMailHandler(options)],
    [OUTBOX_TOPICS.reminder, invitationMailHandler(options)],
    [OUTBOX_TOPICS.closedNotice, closedNoticeMailHandler(options)],
  ]);
}

/** A message given up for good shows in the envelope's trail as `notification.failed`. */
export function notificationFailureHook(auditKey: Buffer): OutboxFailureHook {
  const topics = new Set<string>([OUTBOX_TOPICS.invitation, OUTBOX_TOPICS.reminder, OUTBOX_TOPICS.closedNotice]);
  return async (message, error, { em, now }) => {
    if (!topics.has(message.topic)) return;
    const payload = message.payload as Record<string, unknown>;
    const [row] = await em.execute<{ team_id: string }[]>('select team_id from envelope where id = ?', [String(payload.envelopeId)]);
    if (!row) return;
    await systemEvent(em, auditKey, {
      teamId: row.team_id,
      envelopeId: String(payload.envelopeId),
      type: 'notification.failed',
      at: now,
      details: { topic: message.topic, recipientId: payload.recipientId ?? null, agentId: payload.agentId ?? null, attempts: message.attempt, error },
    });
  };
}
