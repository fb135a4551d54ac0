import fs from 'node:fs';
import path from 'node:path';
import { simpleParser } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMailer } from '../src/domain/notification/mailer.ts';
import { createPhoneProvider } from '../src/domain/notification/sms.ts';
import { redactSecrets } from '../src/shared/redact.ts';
import { graphqlClient, restClient, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { buildEnvelope, invitationsOf, signAndComplete, signingClient } from './helpers/signing.ts';
import { mainWorkerFor } from './helpers/workers.ts';

/*
 * No bearer credential reaches the log (src/shared/redact.ts): a whole signing run, with the
 * app's logger captured from level debug up, leaves the request lines in the log with their
 * credential segments redacted, and none of the tokens, links or keys it issued.
 */

let app: TestApp;

beforeAll(async () => {
  app = await startTestApp({ captureLog: true });
});

afterAll(async () => app?.close());

/** A link's path on the test server (PUBLIC_URL names localhost:0; the server listens on 127.0.0.1). */
const local = (url: string) => `${app.url}${new URL(url).pathname}${new URL(url).search}`;

/** The main worker as main.ts runs it, its mail and phone file sinks and its own lines logged through the app's logger. */
function workerFor(teamId: string) {
  const logger = app.dependencies.logger;
  return mainWorkerFor(app, teamId, {
    dependencies: {
      logger,
      mailer: createMailer({ smtpUrl: undefined, from: 'no-reply@localhost', dataDir: app.dataDir, logger }),
      phone: createPhoneProvider({ provider: undefined, dataDir: app.dataDir, logger }),
    },
  });
}

describe('the log', () => {
  it('holds a signing run’s request lines with their credentials redacted, and none of the tokens, links and keys issued', async () => {
    const team = await seedTeam(app);
    const built = await buildEnvelope(app, team.apiKey, {
      name: 'Logged run',
      recipients: [{ identifier: 'ada' }, { identifier: 'vera', type: 'viewer', agents: [{ info: { name: 'Vera Viewer', phone: '+905551119900' } }] }],
    });
    const rest = restClient(app, team.apiKey);
    expect((await rest.put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
    const invitations = await invitationsOf(app, built.envelopeId);
    const ada = invitations.find((invitation) => invitation.recipientId === built.recipients.ada)!;
    const secrets: string[] = [team.apiKey, ...invitations.map((invitation) => invitation.token)];
    // The invitations go out: a mail and an SMS, each written to DATA_DIR and logged.
    await workerFor(team.teamId).drain();

    // The signer opens the page, reads the session and the document, signs.
    const page = await fetch(`${app.url}/sign/${ada.token}`);
    expect(page.status).toBe(200);
    await page.text();
    const document = await fetch(`${app.url}/signing/documents/${built.documentId}`, { headers: { 'x-signing-token': ada.token } });
    expect(document.status).toBe(200);
    await document.arrayBuffer();
    expect((await signAndComplete(app, ada.token)).errors).toBeUndefined();
    // Sealing, then the completion mails with their 30-day final-copy links.
    while ((await workerFor(team.teamId).drain()) > 0);

    // The page's final copy (5 minutes).
    const pageCopy = await signingClient(app, ada.token)('{ signingFinalCopy { url } }');
    expect(pageCopy.errors).toBeUndefined();
    const pageLink = pageCopy.data.signingFinalCopy.url as string;
    // The completion mail's link (30 days), read from the .eml the file sink wrote.
    const mails = await Promise.all(fs.readdirSync(path.join(app.dataDir, 'mail')).map(async (file) => simpleParser(fs.readFileSync(path.join(app.dataDir, 'mail', file)))));
    const mailLink = mails.map((mail) => /https?:\/\/\S+\/api\/v1\/key\/final-copy\/[A-Za-z0-9._-]+/.exec(mail.text ?? '')?.[0]).find(Boolean)!;
    expect(mailLink).toBeDefined();
    // The team's signed download URLs.
    const graphql = graphqlClient(app, team.apiKey);
    const download = await graphql('query($id: ID!) { downloadUrl(envelopeId: $id) { url } auditLogPdfUrl(envelopeId: $id) { url } }', { id: built.envelopeId });
    expect(download.errors).toBeUndefined();
    const links = [pageLink, mailLink, download.data.downloadUrl.url as string, download.data.auditLogPdfUrl.url as string];
    for (const link of links) {
      const fetched = await fetch(local(link));
      expect(fetched.status, link).toBe(200);
      await fetched.arrayBuffer();
      secrets.push(new URL(link).pathname.split('/').at(-1)!);
    }
    // A link with a credential in its query, and a refused (altered) link: refusals are logged too.
    const refused = await fetch(`${local(pageLink)}x?token=query-secret-0123456789`);
    expect(refused.status).toBe(403);
    await refused.text();

    const log = app.logLines.join('');
    // The request lines are there, redacted.
    const requests = app.logLines.map((line) => JSON.parse(line)).filter((entry) => entry.msg === 'request');
    const paths = requests.map((entry) => entry.path as string);
    expect(paths).toContain('/sign/[redacted]');
    expect(paths).toContain('/api/v1/key/final-copy/[redacted]');
    expect(paths).toContain('/api/v1/key/downloads/[redacted]');
    expect(paths).toContain(`/signing/documents/${built.documentId}`);
    expect(
      requests
        .filter((entry) => entry.path === '/api/v1/key/final-copy/[redacted]')
        .map((entry) => entry.status)
        .sort(),
    ).toEqual([200, 200, 403]);
    // So are the file sinks' lines.
    expect(log).toContain('mail written (SMTP_URL is not set)');
    expect(log).toContain('phone message written (SMS_PROVIDER_URL is not set)');
    // And nothing issued.
    expect(secrets.length).toBeGreaterThanOrEqual(6);
    for (const secret of secrets) {
      expect(secret.length).toBeGreaterThan(20);
      expect(log.includes(secret), `the log holds ${secret}`).toBe(false);
      // Not even the MAC of a signed link on its own.
      if (secret.includes('.')) expect(log.includes(secret.split('.')[1]!)).toBe(false);
    }
    expect(log).not.toContain('query-secret-0123456789');
    expect(log).not.toMatch(/\b(sgn|esk)_[A-Za-z0-9_-]{10}/);
  });

  it('redacts every credential form wherever a line carries it: messages, errors and their stacks, bound fields', async () => {
    const before = app.logLines.length;
    const token = 'sgn_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG';
    const link = `https://sign.example.com/api/v1/key/final-copy/eyJlIjoiYSJ9.bWFjbWFjbWFjbWFjbWFjbWFj`;
    const logger = app.dependencies.logger.child({ link: `https://sign.example.com/sign/${token}` });
    logger.error({ err: new Error(`could not fetch ${link}`), headers: { 'x-signing-token': token, authorization: 'Bearer abcdefghijklmnop' } }, `GET /sign/${token} failed`);
    logger.warn(
      { smtp: 'smtps://mailer:hunter2hunter2@smtp.example.com:465', presigned: 'https://bucket.s3.amazonaws.com/f.pdf?X-Amz-Credential=AKIAXYZ&X-Amz-Signature=deadbeefdeadbeef&x=1' },
      'esk_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG',
    );
    // A one-use signing URL's token (embedded signing), quoted as text.
    logger.info({ issued: 'sgu_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG' }, 'signing URL issued');
    const lines = app.logLines.slice(before).join('');
    for (const secret of [token, 'eyJlIjoiYSJ9.bWFjbWFjbWFjbWFjbWFjbWFj', 'abcdefghijklmnop', 'hunter2hunter2', 'AKIAXYZ', 'deadbeefdeadbeef', 'esk_0123456789', 'sgu_0123456789']) {
      expect(lines.includes(secret), secret).toBe(false);
    }
    expect(lines).toContain('GET /sign/[redacted] failed');
    expect(lines).toContain('could not fetch https://sign.example.com/api/v1/key/final-copy/[redacted]');
    expect(lines).toContain('X-Amz-Signature=[redacted]&x=1');
    expect(lines).toContain('smtps://[redacted]@smtp.example.com:465');
    // Redacting twice changes nothing; ordinary text is left alone.
    const once = redactSecrets(lines);
    expect(redactSecrets(once)).toBe(once);
    const plain = 'GET /signing/documents/0b5f… 200; /sign-assets/3f2a/sign.js; Token limit of 5000 exceeded; cursor=abc&limit=20';
    expect(redactSecrets(plain)).toBe(plain);
  });
});
