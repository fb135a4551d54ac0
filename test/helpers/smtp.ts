import { type ParsedMail, simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export type ReceivedMail = { rcptTo: string[]; mail: ParsedMail; raw: string };

export type TestSmtpServer = {
  url: string;
  /** Every mail accepted so far, in arrival order. */
  received: ReceivedMail[];
  to(address: string): ReceivedMail[];
  close(): Promise<void>;
};

/**
 * A real SMTP server on a free local port that records (and parses) every mail it accepts.
 * `refuse` may answer an SMTP reply (e.g. `{ code: 550, message: 'No such user' }`) for a
 * recipient address, to play a server that bounces or defers mail.
 */
export async function startSmtpServer(options: { refuse?: (address: string) => { code: number; message: string } | null } = {}): Promise<TestSmtpServer> {
  const received: ReceivedMail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onRcptTo(address, _session, callback) {
      const refusal = options.refuse?.(address.address);
      if (!refusal) return callback();
      const error = new Error(refusal.message) as Error & { responseCode: number };
      error.responseCode = refusal.code;
      return callback(error);
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        void simpleParser(raw).then((mail) => {
          received.push({ rcptTo: session.envelope.rcptTo.map((address) => address.address), mail, raw });
          callback();
        }, callback);
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `smtp://127.0.0.1:${(server.server.address() as { port: number }).port}`,
    received,
    to: (address) => received.filter((entry) => entry.rcptTo.includes(address)),
    close: () => new Promise<void>((resolve) => server.close(resolve)),
  };
}

/** The signing link in a mail's text part. */
export function signingLinkIn(entry: ReceivedMail): { link: string; token: string } | null {
  const match = /https?:\/\/\S+\/sign\/(sgn_[A-Za-z0-9_-]+)/.exec(entry.mail.text ?? '');
  return match ? { link: match[0], token: match[1]! } : null;
}
