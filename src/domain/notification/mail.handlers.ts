/**
 * Outbox handlers that deliver the workflow's mails (invitation, your turn, delegated invitation,
 * reminder, closing notices, hand-over notice, final copy).
 *
 * A message's Message-ID is its outbox row's id at the public host: the same on every delivery
 * of that row, so a mail sent again after a crash (between the send and the acknowledgement) is
 * recognisably the same mail. The audit event of a delivery (`invitation.sent`,
 * `notice.sent`) is written in the acknowledgement's transaction, so it is recorded once however
 * many times the work ran; the acknowledgement also drops the signing link from the row.
 */

import fs from 'node:fs/promises';
import type { EntityManager } from '@mikro-orm/postgresql';
import { BlobMissingError, type BlobStore, type LocalBlob } from '../../shared/blob-store/index.ts';
import type { FailureReason } from '../../shared/failure-reason.ts';
import { safeFileNames } from '../artefact/download.service.ts';
import { finalCopyLinkMaker } from '../artefact/final-copy-link.ts';
import { appendAuditEvent } from '../audit/audit.service.ts';
import { DELIVERY_FAILURES } from '../outbox/delivery-failures.ts';
import { handles, type OutboxClaimOf, type OutboxFailureHook, type OutboxHandler, type OutboxMessageClaim, PermanentOutboxError, typedClaim } from '../outbox/outbox-worker.ts';
import { OUTBOX_TOPICS, type OutboxTopic } from '../outbox/topics.ts';
import type { AgentNotificationFailure } from '../recipient/agent.entity.ts';
import { logoExtension } from '../team/team-logo.ts';
import { queueTeamNotice } from '../team/team-notices.ts';
import { completeTeamSettings } from '../team/team-settings.ts';
import {
  type MailBrand,
  type MailKind,
  type MailValues,
  mailLocale,
  renderBulkSendNotice,
  renderMail,
  renderShortText,
  renderTeamNotice,
  type TeamNoticeEventName,
} from './mail-templates.ts';
import type { MailAttachment, Mailer, MailMessage } from './mailer.ts';
import { reservePhoneMessage } from './phone-cap.ts';
import type { PhoneChannel, PhoneProvider } from './sms.ts';

/** An invitation and a reminder carry the same payload and are delivered by one handler. */
type InvitationTopic = typeof OUTBOX_TOPICS.invitation | typeof OUTBOX_TOPICS.reminder;

export type MailHandlerOptions = {
  mailer: Mailer;
  phone: PhoneProvider;
  publicUrl: string;
  auditKey: Buffer;
  blobStore: Pick<BlobStore, 'stat' | 'localCopy'>;
  /** The sealed documents are attached to the completion mail when together they are at most this large. */
  attachmentLimitBytes: number;
  /** PHONE_MESSAGES_PER_DAY: invitations and reminders by phone past it are skipped (phone-cap.ts); absent or 0: no cap. */
  phoneMessagesPerDay?: number;
};

type Person = { name: string | null; email: string | null; phone: string | null; locale: string | null };

/** The Message-ID of an outbox row's mail (without angle brackets). */
export function mailMessageId(outboxId: string, publicUrl: string): string {
  return `${outboxId}@${new URL(publicUrl).hostname}`;
}

export async function envelopeOf(em: EntityManager, envelopeId: string): Promise<{ name: string; teamId: string; status: string }> {
  const [row] = await em.execute<{ name: string; team_id: string; status: string }[]>('select name, team_id, status from envelope where id = ?', [envelopeId]);
  if (!row) throw new PermanentOutboxError(DELIVERY_FAILURES.envelopeMissing, `envelope ${envelopeId} does not exist`);
  return { name: row.name, teamId: row.team_id, status: row.status };
}

type Delivery = { channel: 'email' | PhoneChannel; messageId: string };

/**
 * For an invitation or reminder that will go by phone: its place in the person's daily allowance
 * (phone-cap.ts), kept by the message across retries. Answers the refusal when the person already
 * had the day's messages, else null (also when it goes by mail, or there is no cap).
 */
async function phoneCapRefusal(options: MailHandlerOptions, message: OutboxClaimOf<InvitationTopic>, subject: { em: EntityManager; now: Date }) {
  const payload = message.payload;
  const person: Person | undefined = payload.to;
  const perDay = options.phoneMessagesPerDay ?? 0;
  if (perDay <= 0 || person?.email || !person?.phone || typeof payload.agentId !== 'string') return null;
  const decision = await subject.em.fork().transactional((tx) =>
    reservePhoneMessage(tx, {
      agentId: String(payload.agentId),
      personIndex: Number(payload.personIndex ?? 0),
      envelopeId: String(payload.envelopeId),
      kind: message.topic === OUTBOX_TOPICS.reminder ? 'reminder' : 'invitation',
      outboxMessageId: message.id,
      now: subject.now,
      perDay,
    }),
  );
  if (decision.allowed) return null;
  const channel: PhoneChannel = payload.channel === 'whatsapp' ? 'whatsapp' : 'sms';
  return { channel, limit: decision.limit, retryAt: decision.retryAt };
}

/**
 * Delivers the message in its person's locale: by mail when the person has an email address,
 * else by SMS or WhatsApp (the invitation's `channel`, SMS for notices) when they have a phone.
 */
async function deliver(
  options: MailHandlerOptions,
  message: OutboxMessageClaim,
  mail: { kind: MailKind; values: Omit<MailValues, 'name' | 'brand'>; team: { em: EntityManager; teamId: string; settings?: TeamSettingsRow }; attachments?: MailAttachment[] },
): Promise<Delivery> {
  const { kind, values, team, attachments = [] } = mail;
  const person = message.payload.to as Person | undefined;
  const locale = mailLocale(person?.locale);
  const messageId = mailMessageId(message.id, options.publicUrl);
  if (person?.email) {
    const brand = await teamBrandOf(options, team.em, team, messageId);
    const content = renderMail(kind, locale, { name: person.name, ...values, attached: attachments.length > 0, brand: brand.mail });
    await options.mailer.send({ messageId, to: { name: person.name, address: person.email }, language: locale, ...content, attachments, ...brand.headers });
    return { channel: 'email', messageId };
  }
  if (person?.phone) {
    const channel: PhoneChannel = message.payload.channel === 'whatsapp' ? 'whatsapp' : 'sms';
    await options.phone.send({ messageId, to: person.phone, channel, text: renderShortText(kind, locale, { name: person.name, ...values }) });
    return { channel, messageId };
  }
  throw new PermanentOutboxError(DELIVERY_FAILURES.noAddress);
}

/**
 * The sending team's name, Reply-To and look for one mail. The logo travels inside the mail as an
 * inline attachment (`cid:`), read from the blob store: mail clients block remote images by
 * default, and a mail that showed the logo only by fetching a URL would also tell the service when
 * it was opened (docs/decisions.md, "Mail from the team").
 */
/** The team's settings as stored: completed by completeTeamSettings. */
type TeamSettingsRow = { settings: unknown; settings_version: number };

export async function teamBrandOf(
  options: Pick<MailHandlerOptions, 'blobStore' | 'publicUrl'>,
  em: EntityManager,
  team: { teamId: string; settings?: TeamSettingsRow },
  messageId: string,
): Promise<{ mail: MailBrand; headers: Pick<MailMessage, 'fromName' | 'replyTo' | 'inline'> }> {
  // `team.settings`: the team's row as the handler already read it with its message's envelope.
  const [row] = team.settings ? [team.settings] : await em.execute<TeamSettingsRow[]>('select settings, settings_version from team where id = ?', [team.teamId]);
  const settings = completeTeamSettings(row?.settings ?? {}, row?.settings_version ?? 0, options.publicUrl);
  const logo = settings.branding.logo;
  let inline: NonNullable<MailMessage['inline']> = [];
  if (logo) {
    const copy = await options.blobStore.localCopy(logo.sha256);
    try {
      const cid = `logo.${messageId}`;
      inline = [{ cid, filename: `logo.${logoExtension(logo.contentType)}`, content: await fs.readFile(copy.path), contentType: logo.contentType }];
    } finally {
      copy.release();
    }
  }
  return {
    mail: { displayName: settings.displayName, logoCid: inline[0]?.cid ?? null, accentColor: settings.branding.accentColor, footer: settings.branding.footer },
    headers: { fromName: settings.displayName, replyTo: settings.replyTo, inline },
  };
}

/**
 * The acknowledgement of a delivered message: its audit event, and the agent marked as reached
 * (which clears an earlier failure shown to the sender).
 */
function acknowledgeDelivery(options: MailHandlerOptions, input: { teamId: string; envelopeId: string; agentId: unknown; type: string; at: Date; details: Record<string, unknown> }) {
  return async (tx: EntityManager) => {
    await systemEvent(tx, options.auditKey, input);
    if (typeof input.agentId === 'string') {
      await tx.execute('update agent set notified_at = ?, notification_failure = null where id = ?', [input.at, input.agentId]);
    }
  };
}

/** The sender sees on the agent (both faces) that a message to its people was not delivered. */
async function showFailureOnAgent(em: EntityManager, agentId: unknown, failure: AgentNotificationFailure): Promise<void> {
  if (typeof agentId !== 'string') return;
  await em.execute('update agent set notification_failure = ?::jsonb where id = ?', [JSON.stringify(failure), agentId]);
}

export async function systemEvent(
  em: EntityManager,
  auditKey: Buffer,
  input: { teamId: string; envelopeId: string; type: string; at: Date; details: Record<string, unknown> },
): Promise<void> {
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
export function invitationMailHandler(options: MailHandlerOptions): OutboxHandler<InvitationTopic> {
  return async (message, { em, now, logger }) => {
    const payload = message.payload;
    const envelopeId = payload.envelopeId;
    // The acknowledgement drops `secret`: a row read back after it has none.
    const link = payload.secret?.link;
    // The envelope (as envelopeOf reads it) and the link's state, in one read. A link that died
    // before its mail went out (the envelope closed, the role was delegated away) is not sent: the
    // closing notice or the new person's invitation says what happened. Nor is one to a recipient
    // who has completed meanwhile (a reminder queued just before).
    const [row] = await em.execute<
      { name: string; team_id: string; status: string; token_found: boolean; revoked_at: Date | null; completed_at: Date | null; settings: unknown; settings_version: number }[]
    >(
      `select e.name, e.team_id, e.status, t.id is not null as token_found, t.revoked_at, r.completed_at, tm.settings, tm.settings_version
         from envelope e join team tm on tm.id = e.team_id left join signing_token t on t.id = ? left join recipient r on r.id = t.recipient_id
        where e.id = ?`,
      [String(payload.tokenId), envelopeId],
    );
    if (!row) throw new PermanentOutboxError(DELIVERY_FAILURES.envelopeMissing, `envelope ${envelopeId} does not exist`);
    const envelope = { name: row.name, teamId: row.team_id, status: row.status };
    if (!link) throw new PermanentOutboxError(DELIVERY_FAILURES.messageIncomplete, 'the invitation has no signing link');
    if (!row.token_found || row.revoked_at !== null || row.completed_at !== null || envelope.status !== 'sent') {
      logger.info({ messageId: message.id, envelopeId }, 'invitation not sent: its link is no longer live or its recipient is done');
      return;
    }
    const kind = messageKind(message);
    const capped = await phoneCapRefusal(options, message, { em, now });
    if (capped) {
      // Not sent and not retried (it would be refused again for hours): the trail says so, and the
      // sender sees it on the agent like a failed delivery.
      logger.info({ messageId: message.id, envelopeId }, 'phone message skipped: the person reached the daily cap');
      return async (tx) => {
        await systemEvent(tx, options.auditKey, {
          teamId: envelope.teamId,
          envelopeId,
          type: 'notification.capped',
          at: now,
          details: {
            recipientId: payload.recipientId,
            agentId: payload.agentId,
            personIndex: payload.personIndex,
            tokenId: payload.tokenId,
            channel: capped.channel,
            kind,
            limit: capped.limit,
            retryAt: capped.retryAt.toISOString(),
          },
        });
        const reason = DELIVERY_FAILURES.phoneCapReached(capped.limit);
        await showFailureOnAgent(tx, payload.agentId, {
          kind,
          channel: capped.channel,
          reason: reason.code,
          error: reason.description,
          attempts: message.attempt,
          failedAt: now.toISOString(),
        });
      };
    }
    const { channel, messageId } = await deliver(options, message, {
      kind,
      values: { envelopeName: envelope.name, link, expiresAt: payload.expiresAt ?? null, from: payload.from ?? null },
      team: { em, teamId: envelope.teamId, settings: { settings: row.settings, settings_version: row.settings_version } },
    });
    return acknowledgeDelivery(options, {
      teamId: envelope.teamId,
      envelopeId,
      agentId: payload.agentId,
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

/** What a message is, for its mail's words and for the sender's view of a failure. */
export function messageKind(claim: OutboxMessageClaim): MailKind {
  const message = typedClaim(claim);
  switch (message.topic) {
    case OUTBOX_TOPICS.reminder:
      return 'reminder';
    case OUTBOX_TOPICS.invitation: {
      const kind = message.payload.kind;
      return kind === 'your_turn' ? 'your_turn' : kind === 'delegated' ? 'delegated' : kind === 'reminder' ? 'reminder' : 'invitation';
    }
    case OUTBOX_TOPICS.closedNotice: {
      const { cause, status } = message.payload;
      return cause === 'decline' ? 'declined' : cause === 'expiry' || status === 'expired' ? 'expired' : 'voided';
    }
    case OUTBOX_TOPICS.handoverNotice:
      return 'handed_over';
    default:
      return 'completed';
  }
}

/**
 * `envelope.closed.notice` (voided, declined or expired, to everyone who was invited) and
 * `recipient.handover.notice` (to a delegator, naming who the role went to).
 */
export function noticeMailHandler(options: MailHandlerOptions): OutboxHandler<typeof OUTBOX_TOPICS.closedNotice | typeof OUTBOX_TOPICS.handoverNotice> {
  return async (message, { em, now }) => {
    const payload = message.payload;
    const envelopeId = payload.envelopeId;
    const envelope = await envelopeOf(em, envelopeId);
    const kind = messageKind(message);
    const { channel, messageId } = await deliver(options, message, {
      kind,
      values: { envelopeName: envelope.name, reason: 'reason' in payload ? payload.reason : null, handedTo: 'handedTo' in payload ? payload.handedTo : null },
      team: { em, teamId: envelope.teamId },
    });
    return acknowledgeDelivery(options, {
      teamId: envelope.teamId,
      envelopeId,
      agentId: payload.agentId,
      type: 'notice.sent',
      at: now,
      details: { recipientId: payload.recipientId, agentId: payload.agentId ?? null, channel, kind, messageId },
    });
  };
}

/**
 * `envelope.completed.notice`: the final copy to one person, once sealed. The mail carries a
 * download link for this agent (valid for weeks; no key or signing link needed) and, when the
 * sealed documents together fit under the attachment limit, the PDFs themselves; a phone gets the
 * link only.
 */
export function completedNoticeMailHandler(options: MailHandlerOptions): OutboxHandler<typeof OUTBOX_TOPICS.completedNotice> {
  return async (message, { em, now }) => {
    const payload = message.payload;
    const envelopeId = payload.envelopeId;
    const envelope = await envelopeOf(em, envelopeId);
    if (envelope.status !== 'finalized')
      throw new PermanentOutboxError(DELIVERY_FAILURES.envelopeNotFinalized(envelope.status), `envelope ${envelopeId} is ${envelope.status}, not finalized`);
    const sealed = await sealedAttachments(options, em, envelopeId);
    try {
      const attachments = sealed.attachments;
      // This person's own link to the sealed copy (the signing link died at the closing).
      const link = finalCopyLinkMaker(options.auditKey, options.publicUrl)({ envelopeId, recipientId: payload.recipientId, agentId: payload.agentId }, now);
      const { channel, messageId } = await deliver(options, message, {
        kind: 'completed',
        values: { envelopeName: envelope.name, link: link.url, expiresAt: link.expiresAt.toISOString() },
        team: { em, teamId: envelope.teamId },
        attachments,
      });
      return acknowledgeDelivery(options, {
        teamId: envelope.teamId,
        envelopeId,
        agentId: payload.agentId,
        type: 'notice.sent',
        at: now,
        details: {
          recipientId: payload.recipientId,
          agentId: payload.agentId ?? null,
          channel,
          kind: 'completed',
          attachedDocuments: channel === 'email' ? attachments.length : 0,
          messageId,
        },
      });
    } finally {
      sealed.release();
    }
  };
}

/**
 * The sealed documents of a finalized envelope as attachments, when together they fit under the
 * attachment limit (none otherwise): local copies held until `release`.
 */
async function sealedAttachments(options: MailHandlerOptions, em: EntityManager, envelopeId: string): Promise<{ attachments: MailAttachment[]; release(): void }> {
  const documents = await em.execute<{ name: string; sealed_sha256: string | null }[]>('select name, sealed_sha256 from document where envelope_id = ? order by "order", id', [envelopeId]);
  // Queued by the seal job after sealing, so this only happens if a document was added to the
  // envelope's rows in a way the workflow never does; retrying cannot help.
  if (documents.some((document) => document.sealed_sha256 === null))
    throw new PermanentOutboxError(DELIVERY_FAILURES.documentsNotSealed, `envelope ${envelopeId} has documents that are not sealed`);
  const names = safeFileNames(documents.map((document) => document.name));
  // Sizes from the store (a missing object fails the job by name; the outbox retries it);
  // only attachments that fit are fetched, as local copies held until the mail is sent.
  const sizes = await Promise.all(
    documents.map(async (document) => {
      const info = await options.blobStore.stat(document.sealed_sha256!);
      if (info === undefined) throw new BlobMissingError(document.sealed_sha256!);
      return info.byteSize;
    }),
  );
  const total = sizes.reduce((sum, size) => sum + size, 0);
  const copies: LocalBlob[] = [];
  const release = () => {
    for (const copy of copies) copy.release();
  };
  try {
    if (total <= options.attachmentLimitBytes) {
      for (const document of documents) copies.push(await options.blobStore.localCopy(document.sealed_sha256!));
    }
  } catch (error) {
    release();
    throw error;
  }
  return { attachments: copies.map((copy, index) => ({ filename: names[index]!, path: copy.path })), release };
}

/**
 * `team.notice`: one of the sending team's notification addresses is told what happened to an
 * envelope (completed with the final copy attached when it fits, and the API path to fetch it;
 * declined or voided with the reason; expired; a message that could not be delivered, naming the
 * person, the channel and why). In the team's notification locale, with the team's branding.
 */
export function teamNoticeHandler(options: MailHandlerOptions): OutboxHandler<typeof OUTBOX_TOPICS.teamNotice> {
  const bulkSendNotice = bulkSendNoticeHandler(options);
  return async (message, context) => {
    const { em, now } = context;
    const payload = message.payload;
    if (payload.envelopeId === null) return bulkSendNotice(message, context);
    const envelopeId = payload.envelopeId;
    const envelope = await envelopeOf(em, envelopeId);
    const event = payload.event as TeamNoticeEventName;
    const locale = mailLocale(payload.to.locale);
    const messageId = mailMessageId(message.id, options.publicUrl);
    const sealed = event === 'completed' ? await sealedAttachments(options, em, payload.envelopeId) : { attachments: [], release() {} };
    try {
      const brand = await teamBrandOf(options, em, { teamId: envelope.teamId }, messageId);
      const content = renderTeamNotice(event, locale, {
        envelopeName: envelope.name,
        envelopeId: payload.envelopeId,
        reason: payload.reason ?? null,
        person: payload.person ?? null,
        channel: payload.channel ?? null,
        kind: payload.kind ?? null,
        error: payload.error ?? null,
        // The team's own way to the sealed copy: its API, with its key (no bearer link to forward).
        link: `${options.publicUrl}/api/v1/key/envelopes/${payload.envelopeId}/pdf`,
        attached: sealed.attachments.length > 0,
        brand: brand.mail,
      });
      await options.mailer.send({ messageId, to: { name: null, address: payload.to.email }, language: locale, ...content, attachments: sealed.attachments, ...brand.headers });
    } finally {
      sealed.release();
    }
    return async (tx) => {
      await systemEvent(tx, options.auditKey, {
        teamId: envelope.teamId,
        envelopeId,
        // A delivered notice like the others, told apart by its audience (no recipient or agent).
        type: 'notice.sent',
        at: now,
        details: { audience: 'team', kind: event, channel: 'email', to: payload.to.email, attachedDocuments: sealed.attachments.length, messageId },
      });
    };
  };
}

/**
 * `team.notice` of a finished bulk send (`bulk_send_completed`): how many rows were sent and how
 * many failed, and the API path to its rows. On the team's trail (no envelope), as the bulk send's
 * own events are.
 */
function bulkSendNoticeHandler(options: MailHandlerOptions): OutboxHandler<typeof OUTBOX_TOPICS.teamNotice> {
  return async (message, { em, now }) => {
    const payload = message.payload;
    const bulkSend = payload.bulkSend!;
    const locale = mailLocale(payload.to.locale);
    const messageId = mailMessageId(message.id, options.publicUrl);
    const brand = await teamBrandOf(options, em, { teamId: payload.teamId }, messageId);
    const content = renderBulkSendNotice(locale, { ...bulkSend, link: `${options.publicUrl}/api/v1/key/bulk-sends/${bulkSend.id}/rows`, brand: brand.mail });
    await options.mailer.send({ messageId, to: { name: null, address: payload.to.email }, language: locale, ...content, ...brand.headers });
    return async (tx) => {
      await appendAuditEvent(tx, options.auditKey, {
        teamId: payload.teamId,
        envelopeId: null,
        type: 'notice.sent',
        actor: { type: 'system', id: null },
        request: null,
        details: { audience: 'team', kind: payload.event, channel: 'email', to: payload.to.email, bulkSendId: bulkSend.id, messageId } as never,
        at: now,
      });
      await tx.flush();
    };
  };
}

type NotificationTopic = InvitationTopic | typeof OUTBOX_TOPICS.closedNotice | typeof OUTBOX_TOPICS.handoverNotice | typeof OUTBOX_TOPICS.completedNotice;

const NOTIFICATION_TOPICS = new Set<string>([OUTBOX_TOPICS.invitation, OUTBOX_TOPICS.reminder, OUTBOX_TOPICS.closedNotice, OUTBOX_TOPICS.handoverNotice, OUTBOX_TOPICS.completedNotice]);

export function mailHandlers(options: MailHandlerOptions): Map<string, OutboxHandler<any>> {
  return new Map([
    handles(OUTBOX_TOPICS.invitation, invitationMailHandler(options)),
    handles(OUTBOX_TOPICS.reminder, invitationMailHandler(options)),
    handles(OUTBOX_TOPICS.closedNotice, noticeMailHandler(options)),
    handles(OUTBOX_TOPICS.handoverNotice, noticeMailHandler(options)),
    handles(OUTBOX_TOPICS.completedNotice, completedNoticeMailHandler(options)),
    handles(OUTBOX_TOPICS.teamNotice, teamNoticeHandler(options)),
  ]);
}

/**
 * A message given up for good shows in the envelope's trail as `notification.failed` and on its
 * agent (`notification.failure`, both faces), so the sender sees whom the envelope did not reach.
 */
export function notificationFailureHook(auditKey: Buffer): OutboxFailureHook {
  return async (claim, reason, { em, now }) => {
    const message = typedClaim(claim);
    if (message.topic === OUTBOX_TOPICS.signingOtp) {
      await recordOtpFailure(auditKey, message, reason, { em, now });
      return;
    }
    // A public link's code that could not be mailed: the code leaves the row (the visitor asks for another).
    if (message.topic === OUTBOX_TOPICS.publicLinkCode) {
      await em.execute(`update outbox_message set payload = payload - 'secret' where id = ?`, [message.id]);
      return;
    }
    if (!isNotification(message)) return;
    const payload = message.payload;
    const [row] = await em.execute<{ team_id: string }[]>('select team_id from envelope where id = ?', [payload.envelopeId]);
    if (!row) return;
    const kind = messageKind(claim);
    const channel = 'channel' in payload && payload.channel !== 'none' ? payload.channel : null;
    await systemEvent(em, auditKey, {
      teamId: row.team_id,
      envelopeId: payload.envelopeId,
      type: 'notification.failed',
      at: now,
      details: {
        topic: message.topic,
        kind,
        channel,
        recipientId: payload.recipientId ?? null,
        agentId: payload.agentId ?? null,
        attempts: message.attempt,
        reason: reason.code,
        error: reason.description,
      },
    });
    await showFailureOnAgent(em, payload.agentId, { kind, channel, reason: reason.code, error: reason.description, attempts: message.attempt, failedAt: now.toISOString() });
    // The sending team hears of it at its notification addresses, naming the person and the channel.
    const person: Person | undefined = payload.to;
    await queueTeamNotice(em, {
      teamId: row.team_id,
      envelopeId: payload.envelopeId,
      event: 'delivery_failed',
      now,
      dedupe: message.id,
      notice: {
        person: person ? { name: person.name, email: person.email, phone: person.phone } : null,
        channel: channel ?? (person?.email ? 'email' : person?.phone ? 'sms' : null),
        kind,
        error: reason.description,
      },
    });
  };
}

/**
 * A one-time code that could not be sent: `notification.failed` in the trail (the signer, who is
 * waiting on the page, asks for another), and the code leaves the row as a delivered one would.
 */
function isNotification(message: OutboxClaimOf<OutboxTopic>): message is OutboxClaimOf<NotificationTopic> {
  return NOTIFICATION_TOPICS.has(message.topic);
}

async function recordOtpFailure(auditKey: Buffer, message: OutboxClaimOf<typeof OUTBOX_TOPICS.signingOtp>, reason: FailureReason, { em, now }: { em: EntityManager; now: Date }) {
  await em.execute(`update outbox_message set payload = payload - 'secret' where id = ?`, [message.id]);
  const payload = message.payload;
  const [row] = await em.execute<{ team_id: string }[]>('select team_id from envelope where id = ?', [payload.envelopeId]);
  if (!row) return;
  await systemEvent(em, auditKey, {
    teamId: row.team_id,
    envelopeId: payload.envelopeId,
    type: 'notification.failed',
    at: now,
    details: {
      topic: message.topic,
      kind: 'otp',
      channel: payload.channel ?? null,
      recipientId: payload.recipientId ?? null,
      agentId: payload.agentId ?? null,
      attempts: message.attempt,
      reason: reason.code,
      error: reason.description,
    },
  });
}
