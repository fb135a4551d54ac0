/**
 * The signers' mail server: a real SMTP server (smtp-server) on a free local port that the service
 * mails through (SMTP_URL). Every accepted mail is parsed (mailparser) and filed under each of its
 * recipients' addresses, with the time it arrived; a simulated signer waits for the next mail to
 * its address and reads the signing link from its text, as a person would.
 */
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export type Mail = { at: number; subject: string; text: string; attachments: number; bytes: number };

export type Mailbox = {
  url: string;
  /** Resolves with the first mail to `address` (not taken before) for which `matches` holds. */
  next(address: string, matches: (mail: Mail) => boolean, timeoutMs?: number): Promise<Mail>;
  received(): number;
  close(): Promise<void>;
};

export async function startMailbox(): Promise<Mailbox> {
  const boxes = new Map<string, Mail[]>();
  const waiting = new Map<string, { matches: (mail: Mail) => boolean; resolve: (mail: Mail) => void }[]>();
  let count = 0;
  const deliver = (address: string, mail: Mail) => {
    const waiters = waiting.get(address) ?? [];
    const waiter = waiters.find((candidate) => candidate.matches(mail));
    if (waiter) {
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve(mail);
      return;
    }
    boxes.set(address, [...(boxes.get(address) ?? []), mail]);
  };
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const at = Date.now();
        const raw = Buffer.concat(chunks);
        const to = session.envelope.rcptTo.map((address) => address.address.toLowerCase());
        // Accepted at once, as a mail server does: the parsing below is this bench's work, and
        // the service's send must not wait for it.
        callback();
        void simpleParser(raw).then((parsed) => {
          count += 1;
          const mail: Mail = { at, subject: parsed.subject ?? '', text: parsed.text ?? '', attachments: parsed.attachments.length, bytes: raw.length };
          for (const address of to) deliver(address, mail);
        });
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `smtp://127.0.0.1:${(server.server.address() as { port: number }).port}`,
    next(address, matches, timeoutMs = 300_000) {
      const key = address.toLowerCase();
      const box = boxes.get(key) ?? [];
      const found = box.find(matches);
      if (found) {
        box.splice(box.indexOf(found), 1);
        return Promise.resolve(found);
      }
      return new Promise((resolve, reject) => {
        const waiter = {
          matches,
          resolve: (mail: Mail) => {
            clearTimeout(timer);
            resolve(mail);
          },
        };
        const timer = setTimeout(() => {
          const waiters = waiting.get(key) ?? [];
          if (waiters.includes(waiter)) waiters.splice(waiters.indexOf(waiter), 1);
          reject(new Error(`no mail for ${address} within ${timeoutMs / 1000} s`));
        }, timeoutMs);
        waiting.set(key, [...(waiting.get(key) ?? []), waiter]);
      });
    },
    received: () => count,
    close: () => new Promise<void>((resolve) => server.close(resolve)),
  };
}
