import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export type ReceivedMail = { rcptTo: string[]; mail: ParsedMail; raw: string };

export type TestSmtpServer = {
  url: string;
  /** Every mail accepted so far, in arrival order. */
  received: ReceivedMail[];
  to(address: string): ReceivedMail[];
  close(): Promise<void>;
};

/** A real SMTP server on a free local port that records (and parses) every mail it accepts. */
export async function startSmtpServer(): Promise<TestSmtpServer> {
  const received: ReceivedMail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
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
