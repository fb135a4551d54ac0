/**
 * Sends mail: nodemailer over `SMTP_URL`, else `.eml` files under `DATA_DIR/mail` and a log line
 * (a service without a mail server still shows what it would have sent).
 *
 * Every message carries the Message-ID given by its caller, derived from the outbox row: a
 * message sent again after a crash (sent, then the process died before the acknowledgement) has
 * the same Message-ID, so the receiving side can tell it is the same mail, and the file default
 * writes the same file again rather than a second one.
 */
import { createReadStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import nodemailer from 'nodemailer';
import { ReasonedError } from '../../shared/failure-reason.ts';
import type { Logger } from '../../shared/logger.ts';
import { DELIVERY_FAILURES } from '../outbox/delivery-failures.ts';
import { PermanentOutboxError } from '../outbox/outbox-worker.ts';

export type MailMessage = {
  /** Without angle brackets: `<local>@<host>`. */
  messageId: string;
  to: { name: string | null; address: string };
  subject: string;
  text: string;
  html: string;
  language: string;
  /** Files from the blob store (the sealed PDFs of a completion mail). */
  attachments?: MailAttachment[];
  /** The sending team's display name: the From's name (MAIL_FROM's address stays). */
  fromName?: string | null;
  /** The sending team's Reply-To. */
  replyTo?: string | null;
  /** Images the HTML shows by `cid:` (the team's logo), carried in the message itself. */
  inline?: { cid: string; filename: string; content: Buffer; contentType: string }[];
};

export type MailAttachment = { filename: string; path: string };

/** MAIL_FROM's address, without its display name (`Envelopes <no-reply@x>` → `no-reply@x`). */
export function fromAddress(from: string): string {
  const bracketed = /<([^<>]+)>\s*$/.exec(from);
  return (bracketed ? bracketed[1]! : from).trim();
}

export type Mailer = {
  send(message: MailMessage): Promise<void>;
  close(): void;
};

/** Header values never carry a line break (or another control character): no header injection. */
export function oneLine(value: string): string {
  return value.replace(/[\u0000-\u001f\u007f\u2028\u2029]+/g, ' ').trim();
}

function mailOptions(from: string, message: MailMessage) {
  return {
    // An address object when the team names itself: nodemailer quotes and encodes the name, so a
    // name with quotes, commas or angle brackets stays a name and never becomes another address.
    from: message.fromName ? { name: oneLine(message.fromName), address: oneLine(fromAddress(from)) } : oneLine(from),
    ...(message.replyTo ? { replyTo: { name: oneLine(message.fromName ?? ''), address: oneLine(message.replyTo) } } : {}),
    // An address object: nodemailer quotes and encodes the display name itself.
    to: { name: oneLine(message.to.name ?? ''), address: oneLine(message.to.address) },
    subject: oneLine(message.subject),
    text: message.text,
    html: message.html,
    messageId: `<${oneLine(message.messageId)}>`,
    headers: { 'Content-Language': oneLine(message.language), 'Auto-Submitted': 'auto-generated' },
    // Read here as streams: `disableFileAccess` below refuses file paths nodemailer would open itself.
    attachments: [
      ...(message.inline ?? []).map((image) => ({
        cid: oneLine(image.cid),
        filename: oneLine(image.filename),
        content: image.content,
        contentType: image.contentType,
        contentDisposition: 'inline' as const,
      })),
      ...(message.attachments ?? []).map((attachment) => ({
        filename: oneLine(attachment.filename),
        content: createReadStream(attachment.path),
        contentType: 'application/pdf',
      })),
    ],
    // No address may be read from a header the caller could influence.
    disableFileAccess: true,
    disableUrlAccess: true,
  };
}

/**
 * A 5xx reply to the recipient or the message (no such mailbox, message refused) is final:
 * retrying cannot change it, so the message fails at once and the sender sees it. Everything
 * else (4xx deferrals, a server that is down, an authentication problem an operator can fix)
 * is retried with backoff.
 */
export function classifySmtpError(error: unknown): Error {
  const smtp = error as { code?: string; responseCode?: number; response?: string; message?: string };
  const detail = `the mail server answered: ${oneLine(smtp.response ?? smtp.message ?? String(smtp.responseCode))}`;
  const permanent =
    (smtp.code === 'EENVELOPE' || smtp.code === 'EMESSAGE') && typeof smtp.responseCode === 'number' && smtp.responseCode >= 500 && smtp.responseCode < 600 && smtp.responseCode !== 503;
  // The reply's text (which may name the relay's hosts) is the detail, for the log; callers get the codes.
  if (permanent) return new PermanentOutboxError(DELIVERY_FAILURES.mailRefused(smtp.responseCode, smtp.response), detail);
  const deferred = typeof smtp.responseCode === 'number' && smtp.responseCode >= 400 && smtp.responseCode < 500;
  return new ReasonedError(deferred ? DELIVERY_FAILURES.mailDeferred(smtp.responseCode!, smtp.response) : DELIVERY_FAILURES.mailUnavailable, detail, { cause: error });
}

export function createMailer(options: { smtpUrl: string | undefined; from: string; dataDir: string; logger: Logger }): Mailer {
  if (options.smtpUrl) {
    const transport = nodemailer.createTransport(options.smtpUrl);
    return {
      async send(message) {
        try {
          await transport.sendMail(mailOptions(options.from, message));
        } catch (error) {
          throw classifySmtpError(error);
        }
      },
      close: () => transport.close(),
    };
  }
  const directory = path.join(options.dataDir, 'mail');
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  return {
    async send(message) {
      const info = await transport.sendMail(mailOptions(options.from, message));
      await fs.mkdir(directory, { recursive: true });
      // Named by the Message-ID: a message written again replaces its own file.
      const file = path.join(directory, `${message.messageId.replace(/[^A-Za-z0-9._-]/g, '_')}.eml`);
      const temporary = `${file}.tmp`;
      await fs.writeFile(temporary, info.message as Buffer);
      await fs.rename(temporary, file);
      options.logger.info({ file, to: message.to.address, subject: message.subject }, 'mail written (SMTP_URL is not set)');
    },
    close: () => transport.close(),
  };
}
