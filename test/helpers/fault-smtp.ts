/**
 * A real SMTP server (smtp-server) that can be made to fail the ways a mail server fails, for the
 * fault suite: not listening at all (connections refused), greeting with 421 (service not
 * available), deferring recipients with 450, or holding a message in the middle of DATA without
 * ever answering (so a sender can be killed mid-delivery). Only mails it answered 250 to are
 * recorded, each with its Message-ID; a held mail whose sender went away was never delivered.
 */
import { type ParsedMail, simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export type SmtpMode = 'accept' | 'refuse-connections' | 'greet-421' | 'defer-450';

export type AcceptedMail = { messageId: string; rcptTo: string[]; mail: ParsedMail };

export type FaultSmtpServer = {
  url: string;
  port: number;
  accepted: AcceptedMail[];
  /** Connections that reached the server (refused ones while not listening never do). */
  connections(): number;
  /** Messages whose DATA arrived while `hold` said so: never answered until released. */
  held(): number;
  mode(): SmtpMode;
  setMode(mode: SmtpMode): Promise<void>;
  /** While it answers true, a message's DATA is taken in but not answered. */
  hold(predicate: ((rcptTo: string[]) => boolean) | undefined): void;
  /** Answers every held message (250) and records it. */
  releaseHeld(): void;
  /** How many times each Message-ID was accepted. */
  countsByMessageId(): Map<string, number>;
  close(): Promise<void>;
};

export async function startFaultSmtpServer(initial: SmtpMode = 'accept'): Promise<FaultSmtpServer> {
  const accepted: AcceptedMail[] = [];
  let mode: SmtpMode = initial;
  let connections = 0;
  let holdPredicate: ((rcptTo: string[]) => boolean) | undefined;
  const heldCallbacks: (() => void)[] = [];
  // A sender that went away (killed) before its held message was answered never delivered it.
  const closedSessions = new Set<string>();
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    disableReverseLookup: true,
    logger: false,
    onClose(session) {
      closedSessions.add(session.id);
    },
    onConnect(_session, callback) {
      connections += 1;
      if (mode !== 'greet-421') return callback();
      const error = new Error('Service not available, try again later') as Error & { responseCode: number };
      error.responseCode = 421;
      return callback(error);
    },
    onRcptTo(_address, _session, callback) {
      if (mode !== 'defer-450') return callback();
      const error = new Error('Mailbox busy, try again later') as Error & { responseCode: number };
      error.responseCode = 450;
      return callback(error);
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const rcptTo = session.envelope.rcptTo.map((address) => address.address);
        const raw = Buffer.concat(chunks).toString('utf8');
        const accept = () => {
          if (closedSessions.has(session.id)) return;
          void simpleParser(raw).then((mail) => {
            accepted.push({ messageId: mail.messageId ?? '', rcptTo, mail });
            callback();
          }, callback);
        };
        if (holdPredicate?.(rcptTo)) heldCallbacks.push(accept);
        else accept();
      });
    },
  });
  server.on('error', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as { port: number }).port;
  const listening = () => server.server.listening;
  const stopListening = () => new Promise<void>((resolve) => (listening() ? server.server.close(() => resolve()) : resolve()));
  const startListening = () => new Promise<void>((resolve, reject) => (listening() ? resolve() : server.server.once('error', reject).listen(port, '127.0.0.1', () => resolve())));
  if (initial === 'refuse-connections') await stopListening();
  return {
    url: `smtp://127.0.0.1:${port}`,
    port,
    accepted,
    connections: () => connections,
    held: () => heldCallbacks.length,
    mode: () => mode,
    async setMode(next) {
      mode = next;
      if (next === 'refuse-connections') await stopListening();
      else await startListening();
    },
    hold(predicate) {
      holdPredicate = predicate;
    },
    releaseHeld() {
      for (const accept of heldCallbacks.splice(0)) accept();
    },
    countsByMessageId() {
      const counts = new Map<string, number>();
      for (const mail of accepted) counts.set(mail.messageId, (counts.get(mail.messageId) ?? 0) + 1);
      return counts;
    },
    async close() {
      holdPredicate = undefined;
      for (const accept of heldCallbacks.splice(0)) accept();
      await startListening().catch(() => undefined);
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
