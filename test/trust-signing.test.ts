/**
 * Issue 35: signers' advanced and qualified signatures at their trust service, through the
 * service's faces and the provider's real OAuth pages (test/helpers/csc-provider.ts). The browser
 * is played by fetch: it posts the provider's form (the PIN, the consent) and follows the
 * redirects to the service's callback. Chromium plays it in trust-signing-page.test.ts.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CscTestProvider, startCscProvider } from './helpers/csc-provider.ts';
import { restClient, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { pdfsig } from './helpers/pdf-tools.ts';
import { freePort } from './helpers/pg-cluster.ts';
import { downloadSealed, sealWorker } from './helpers/seal-jobs.ts';
import { buildEnvelope, signingClient, tokenFor, typedSignature } from './helpers/signing.ts';
import { startLocalTsa } from './helpers/tsa.ts';
import { restVerify } from './helpers/verify-client.ts';

let app: TestApp;
let provider: CscTestProvider;
let directory: string;

beforeAll(async () => {
  provider = await startCscProvider({ name: 'Test Qualified Trust Service CA' });
  const port = await freePort();
  // The provider sends the browser back to PUBLIC_URL: the app's own address.
  app = await startTestApp({ env: { PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}` } });
  directory = fs.mkdtempSync(path.join(os.tmpdir(), 'trust-signing-'));
});
afterAll(async () => {
  await app?.close();
  await provider?.close();
  fs.rmSync(directory, { recursive: true, force: true });
});

const SESSION = `envelope { status } recipient { completedAt } trustSignature { level status error { name reason message } authorizeUrl }`;
const FIELDS_QUERY = `{ signingSession { fields { id type } } }`;
const FINISH = `mutation($values: [SigningValueInput!], $consent: String) { submitSigning(values: $values, complete: true, consent: $consent) { ${SESSION} } }`;
const SESSION_QUERY = `{ signingSession { ${SESSION} } }`;

async function teamWithTrustService(levels: ('advanced' | 'qualified')[] = ['advanced', 'qualified']) {
  const team = await seedTeam(app);
  const saved = await restClient(app, team.apiKey).patch('/team/settings', {
    trustServices: [{ id: 'tsp', name: 'Test TSP', baseUrl: provider.baseUrl, clientId: provider.clientId, clientSecret: provider.clientSecret, levels }],
  });
  expect(saved.status, JSON.stringify(saved.body)).toBe(200);
  return team;
}

/** Fills the link's signature fields and finishes: the answer of submitSigning. */
async function finish(token: string) {
  const client = signingClient(app, token);
  const fields = (await client(FIELDS_QUERY)).data.signingSession.fields;
  return client(FINISH, { values: fields.map((field: { id: string }) => ({ fieldId: field.id, value: typedSignature })), consent: 'I agree to sign with my certificate.' });
}

/** The provider's page as the signer's browser submits it: answers where the provider redirects (the service's callback). */
async function atProvider(authorizeUrl: string, form: Record<string, string>): Promise<string> {
  const params = new URL(authorizeUrl).searchParams;
  for (const [name, value] of Object.entries(form)) params.set(name, value);
  const response = await fetch(new URL('authorize', authorizeUrl), { method: 'POST', body: params, redirect: 'manual' });
  expect(response.status).toBe(302);
  return response.headers.get('location')!;
}

/** The browser at the service's callback: answers the 303's location. */
async function atCallback(callbackUrl: string): Promise<{ status: number; location: string | null }> {
  const url = new URL(callbackUrl);
  expect(url.pathname, callbackUrl).toBe('/sign/trust-service/callback');
  const response = await fetch(callbackUrl, { redirect: 'manual' });
  await response.arrayBuffer();
  return { status: response.status, location: response.headers.get('location') };
}

/** The whole round trip for a link whose Finish answered `authorizeUrl`: both authorizations with `pin`. */
async function authorizeAndSign(authorizeUrl: string, person: { email: string; pin: string }) {
  const first = await atCallback(await atProvider(authorizeUrl, { username: person.email, pin: person.pin, consent: 'yes' }));
  expect(first.status).toBe(303);
  expect(first.location!.startsWith(provider.baseUrl)).toBe(true);
  const secondCallback = await atProvider(first.location!, { pin: person.pin, consent: 'yes' });
  const second = await atCallback(secondCallback);
  // The attempt just made (this file's tests run one at a time): signed, or why not.
  const [attempt] = await app.orm.em.fork().execute<{ status: string; error: unknown }[]>('select status, error from signer_signature order by updated_at desc limit 1');
  expect(attempt, JSON.stringify(attempt)).toMatchObject({ status: 'signed' });
  return { secondCallback, second };
}

async function envelopeFor(team: { apiKey: string }, recipients: Parameters<typeof buildEnvelope>[2]['recipients']) {
  const built = await buildEnvelope(app, team.apiKey, { name: 'Trust', recipients });
  const sent = await restClient(app, team.apiKey).put(`/envelopes/${built.envelopeId}/send`);
  expect(sent.status, JSON.stringify(sent.body)).toBe(200);
  return built;
}

async function eventsOf(envelopeId: string, type: string) {
  return app.orm.em.fork().execute<{ details: any }[]>(`select details from audit_event where envelope_id = ? and type = ? order by seq`, [envelopeId, type]);
}

describe('signatures at a trust service (advanced and qualified)', () => {
  it('an advanced and then a qualified signer sign at their provider; the seal over both keeps all three valid', async () => {
    const ada = provider.addUser({ name: 'Ada Advanced', email: 'ada@example.com', pin: '1111', level: 'advanced' });
    const quinn = provider.addUser({ name: 'Quinn Qualified', email: 'quinn@example.com', pin: '2222', level: 'qualified' });
    const team = await teamWithTrustService();
    const built = await envelopeFor(team, [
      { identifier: 'ada', order: 1, signatureLevel: 'advanced', agents: [{ info: { name: 'Ada Advanced', email: 'ada@example.com' } }] },
      { identifier: 'quinn', order: 2, signatureLevel: 'qualified', agents: [{ info: { name: 'Quinn Qualified', email: 'quinn@example.com' } }] },
    ]);

    const adaToken = await tokenFor(app, built.envelopeId, built.recipients.ada!);
    const finished = await finish(adaToken);
    expect(finished.errors, JSON.stringify(finished.errors)).toBeUndefined();
    // Finish saved the values and sent the signer to the provider: the role is not complete yet.
    expect(finished.data.submitSigning.recipient.completedAt).toBeNull();
    expect(finished.data.submitSigning.trustSignature).toMatchObject({ level: 'advanced', status: 'authorizing' });
    const authorizeUrl = new URL(finished.data.submitSigning.trustSignature.authorizeUrl);
    expect(authorizeUrl.searchParams.get('scope')).toBe('service');
    expect(authorizeUrl.searchParams.get('code_challenge_method')).toBe('S256');

    const { second } = await authorizeAndSign(authorizeUrl.toString(), { email: 'ada@example.com', pin: '1111' });
    expect(second).toEqual({ status: 303, location: `/sign/${adaToken}` });
    expect(provider.signedCount(ada.credentialId)).toBe(1);
    const afterAda = (await signingClient(app, adaToken)(SESSION_QUERY)).data.signingSession;
    expect(afterAda.recipient.completedAt).not.toBeNull();
    expect(afterAda.trustSignature).toMatchObject({ status: 'signed', error: null, authorizeUrl: null });
    const [completed] = await eventsOf(built.envelopeId, 'recipient.completed');
    expect(completed!.details.signature).toMatchObject({ level: 'advanced', trustServiceId: 'tsp', certificate: { subject: expect.stringContaining('Ada Advanced') } });

    const quinnToken = await tokenFor(app, built.envelopeId, built.recipients.quinn!);
    const quinnFinished = await finish(quinnToken);
    await authorizeAndSign(quinnFinished.data.submitSigning.trustSignature.authorizeUrl, { email: 'quinn@example.com', pin: '2222' });
    expect(provider.signedCount(quinn.credentialId)).toBe(1);
    const [envelope] = await app.orm.em.fork().execute<{ status: string }[]>('select status from envelope where id = ?', [built.envelopeId]);
    expect(envelope!.status).toBe('finalized');

    expect(await sealWorker(app, team.teamId, []).drain()).toBe(1);
    const file = await downloadSealed(app, directory, team.apiKey, built.envelopeId, built.documentId, 'two-signers.pdf');
    const report = pdfsig(file);
    expect(report).toContain('Ada Advanced');
    expect(report).toContain('Quinn Qualified');
    expect(report).toContain('Signature #3');
    expect(report.match(/Signature is Valid/g)).toHaveLength(3);

    // verify names each signer's certificate and the level its QC statements claim.
    const verified = await restVerify(app, team.apiKey, fs.readFileSync(file));
    expect(verified.status).toBe(200);
    const signatures = verified.body.payload.verification.signatures as any[];
    expect(signatures.slice(0, 2).map((signature) => [signature.valid, signature.signer.level, signature.signer.subject])).toEqual([
      [true, 'advanced', expect.stringContaining('Ada Advanced')],
      [true, 'qualified', expect.stringContaining('Quinn Qualified')],
    ]);
    // And so does the certificate of completion, saying each validates in the sealed document.
    const audit = await fetch(`${app.url}/api/v1/key/envelopes/${built.envelopeId}/audit/pdf`, { headers: { 'x-service-api-key': team.apiKey } });
    expect(audit.status).toBe(200);
    const auditFile = path.join(directory, 'two-signers-certificate.pdf');
    fs.writeFileSync(auditFile, Buffer.from(await audit.arrayBuffer()));
    const text = execFileSync('pdftotext', ['-enc', 'UTF-8', auditFile, '-'], { encoding: 'utf8' }).replace(/\s+/g, ' ');
    expect(text).toContain('CN=Ada Advanced');
    expect(text).toContain('CN=Quinn Qualified');
    expect(text).toContain('Level by the certificate’s QC statements: qualified (qualified certificate, key in a qualified signature creation device)');
    expect(text.match(/Validates: yes/g)).toHaveLength(2);
  });

  it('a callback arriving twice at once signs once, and a replay later changes nothing', async () => {
    const ren = provider.addUser({ name: 'Ren Replay', email: 'ren@example.com', pin: '3333', level: 'advanced' });
    const team = await teamWithTrustService(['advanced']);
    const built = await envelopeFor(team, [{ identifier: 'ren', signatureLevel: 'advanced', agents: [{ info: { name: 'Ren Replay', email: 'ren@example.com' } }] }]);
    const token = await tokenFor(app, built.envelopeId, built.recipients.ren!);
    const finished = await finish(token);
    const first = await atCallback(await atProvider(finished.data.submitSigning.trustSignature.authorizeUrl, { username: 'ren@example.com', pin: '3333', consent: 'yes' }));
    const secondCallback = await atProvider(first.location!, { pin: '3333', consent: 'yes' });
    // The same redirect twice at once (a double click, a browser retrying): one of them signs.
    const both = await Promise.all([atCallback(secondCallback), atCallback(secondCallback)]);
    expect(both.map((answer) => answer.location)).toEqual([`/sign/${token}`, `/sign/${token}`]);
    expect(provider.signedCount(ren.credentialId)).toBe(1);
    expect(await eventsOf(built.envelopeId, 'recipient.completed')).toHaveLength(1);
    // Replayed later (from history): the page again, nothing signed or recorded.
    expect(await atCallback(secondCallback)).toEqual({ status: 303, location: `/sign/${token}` });
    expect(provider.signedCount(ren.credentialId)).toBe(1);
    expect(await eventsOf(built.envelopeId, 'recipient.completed')).toHaveLength(1);
    // A state nobody issued: a page saying the link does not work.
    expect((await atCallback(`${app.url}/sign/trust-service/callback?state=tss_forged&code=x`)).status).toBe(404);
  });

  it('the provider down: Finish says Signing.TrustServiceFailed (502) with the values saved; down at the callback, the page says so; back up, Finish again signs', async () => {
    const dee = provider.addUser({ name: 'Dee Down', email: 'dee@example.com', pin: '4444', level: 'advanced' });
    const team = await teamWithTrustService(['advanced']);
    const built = await envelopeFor(team, [{ identifier: 'dee', signatureLevel: 'advanced', agents: [{ info: { name: 'Dee Down', email: 'dee@example.com' } }] }]);
    const token = await tokenFor(app, built.envelopeId, built.recipients.dee!);
    await provider.setDown(true, 'refused');
    let refused;
    try {
      refused = await finish(token);
    } finally {
      await provider.setDown(false);
    }
    expect(refused.errors?.[0]?.extensions?.code).toBe('Signing.TrustServiceFailed');
    expect(refused.errors?.[0]?.extensions?.context).toMatchObject({ reason: 'unreachable' });
    const saved = (await signingClient(app, token)(`{ signingSession { recipient { completedAt } fields { value } trustSignature { status error { reason } } } }`)).data.signingSession;
    expect(saved.fields[0].value).toMatchObject({ kind: 'typed' });
    expect(saved.recipient.completedAt).toBeNull();
    expect(saved.trustSignature).toEqual({ status: 'failed', error: { reason: 'unreachable' } });

    // Up at Finish, down when the browser comes back with the code: the attempt fails, the page says why.
    const again = await finish(token);
    const callback = await atProvider(again.data.submitSigning.trustSignature.authorizeUrl, { username: 'dee@example.com', pin: '4444', consent: 'yes' });
    await provider.setDown(true, 'refused');
    let back;
    try {
      back = await atCallback(callback);
    } finally {
      await provider.setDown(false);
    }
    expect(back).toEqual({ status: 303, location: `/sign/${token}` });
    const failed = (await signingClient(app, token)(SESSION_QUERY)).data.signingSession;
    expect(failed.trustSignature).toMatchObject({ status: 'failed', error: { name: 'Signing.TrustServiceFailed', reason: 'unreachable' } });
    expect((await eventsOf(built.envelopeId, 'signature.failed')).map((event) => event.details.reason)).toEqual(['unreachable', 'unreachable']);

    const third = await finish(token);
    await authorizeAndSign(third.data.submitSigning.trustSignature.authorizeUrl, { email: 'dee@example.com', pin: '4444' });
    expect(provider.signedCount(dee.credentialId)).toBe(1);
    // The only signer: the envelope is finalized (the link's page now offers the final copy).
    const [envelope] = await app.orm.em.fork().execute<{ status: string }[]>('select status from envelope where id = ?', [built.envelopeId]);
    expect(envelope!.status).toBe('finalized');
  });

  it('a wrong PIN, and a revoked certificate, end the attempt by name with nothing signed; the signer can finish again', async () => {
    const pat = provider.addUser({ name: 'Pat Pin', email: 'pat@example.com', pin: '5555', level: 'advanced' });
    const rex = provider.addUser({ name: 'Rex Revoked', email: 'rex@example.com', pin: '6666', level: 'qualified' });
    provider.revoke(rex.credentialId);
    const team = await teamWithTrustService();
    const built = await envelopeFor(team, [
      { identifier: 'pat', order: 1, signatureLevel: 'advanced', agents: [{ info: { name: 'Pat Pin', email: 'pat@example.com' } }] },
      { identifier: 'rex', order: 1, signatureLevel: 'qualified', agents: [{ info: { name: 'Rex Revoked', email: 'rex@example.com' } }] },
    ]);
    const patToken = await tokenFor(app, built.envelopeId, built.recipients.pat!);
    const patFinished = await finish(patToken);
    const wrongPin = await atCallback(await atProvider(patFinished.data.submitSigning.trustSignature.authorizeUrl, { username: 'pat@example.com', pin: '0000', consent: 'yes' }));
    expect(wrongPin).toEqual({ status: 303, location: `/sign/${patToken}` });
    const patSession = (await signingClient(app, patToken)(SESSION_QUERY)).data.signingSession;
    expect(patSession.trustSignature).toMatchObject({ status: 'failed', error: { reason: 'declined', message: expect.stringContaining('Invalid PIN') } });
    expect(patSession.recipient.completedAt).toBeNull();
    expect(provider.signedCount(pat.credentialId)).toBe(0);

    const rexToken = await tokenFor(app, built.envelopeId, built.recipients.rex!);
    const rexFinished = await finish(rexToken);
    const revoked = await atCallback(await atProvider(rexFinished.data.submitSigning.trustSignature.authorizeUrl, { username: 'rex@example.com', pin: '6666', consent: 'yes' }));
    expect(revoked).toEqual({ status: 303, location: `/sign/${rexToken}` });
    expect((await signingClient(app, rexToken)(SESSION_QUERY)).data.signingSession.trustSignature).toMatchObject({ status: 'failed', error: { reason: 'certificate_revoked' } });
    expect(provider.signedCount(rex.credentialId)).toBe(0);

    // The right PIN this time.
    const patAgain = await finish(patToken);
    await authorizeAndSign(patAgain.data.submitSigning.trustSignature.authorizeUrl, { email: 'pat@example.com', pin: '5555' });
    expect((await signingClient(app, patToken)(SESSION_QUERY)).data.signingSession.recipient.completedAt).not.toBeNull();
  });

  it('values saved after Finish retire the attempt out for authorization: its callback signs nothing', async () => {
    const val = provider.addUser({ name: 'Val Values', email: 'val@example.com', pin: '7777', level: 'advanced' });
    const team = await teamWithTrustService(['advanced']);
    const built = await envelopeFor(team, [{ identifier: 'val', signatureLevel: 'advanced', agents: [{ info: { name: 'Val Values', email: 'val@example.com' } }] }]);
    const token = await tokenFor(app, built.envelopeId, built.recipients.val!);
    const finished = await finish(token);
    const first = await atCallback(await atProvider(finished.data.submitSigning.trustSignature.authorizeUrl, { username: 'val@example.com', pin: '7777', consent: 'yes' }));
    // Another tab saves another signature while the provider asks for the PIN.
    const client = signingClient(app, token);
    const fieldId = (await client(FIELDS_QUERY)).data.signingSession.fields[0].id;
    const changed = await client(`mutation($values: [SigningValueInput!]) { submitSigning(values: $values) { recipient { completedAt } } }`, {
      values: [{ fieldId, value: { kind: 'typed', text: 'Someone Else', font: 'cursive' } }],
    });
    expect(changed.errors).toBeUndefined();
    const back = await atCallback(await atProvider(first.location!, { pin: '7777', consent: 'yes' }));
    expect(back).toEqual({ status: 303, location: `/sign/${token}` });
    expect(provider.signedCount(val.credentialId)).toBe(0);
    expect((await client(SESSION_QUERY)).data.signingSession.trustSignature).toMatchObject({ status: 'failed', error: { reason: 'values_changed' } });
  });

  it('a step cut off by a dead process is said as interrupted once its time is up, and Finish again signs', async () => {
    const ivy = provider.addUser({ name: 'Ivy Interrupted', email: 'ivy@example.com', pin: '8888', level: 'advanced' });
    const team = await teamWithTrustService(['advanced']);
    const built = await envelopeFor(team, [{ identifier: 'ivy', signatureLevel: 'advanced', agents: [{ info: { name: 'Ivy Interrupted', email: 'ivy@example.com' } }] }]);
    const token = await tokenFor(app, built.envelopeId, built.recipients.ivy!);
    await finish(token);
    // As a process that died while signing leaves it (test/faults/trust-signing-kill.test.ts kills one for real).
    const stuck = async (minutesAgo: number) =>
      app.orm.em.fork().execute(`update signer_signature set status = 'signing', updated_at = now() - make_interval(mins => ?) where recipient_id = ?`, [minutesAgo, built.recipients.ivy]);
    await stuck(1);
    expect((await signingClient(app, token)(SESSION_QUERY)).data.signingSession.trustSignature).toMatchObject({ status: 'signing', error: null });
    await stuck(16);
    expect((await signingClient(app, token)(SESSION_QUERY)).data.signingSession.trustSignature).toMatchObject({
      status: 'failed',
      error: { name: 'Signing.TrustServiceFailed', reason: 'interrupted' },
    });
    const again = await finish(token);
    await authorizeAndSign(again.data.submitSigning.trustSignature.authorizeUrl, { email: 'ivy@example.com', pin: '8888' });
    expect(provider.signedCount(ivy.credentialId)).toBe(1);
    expect(await eventsOf(built.envelopeId, 'recipient.completed')).toHaveLength(1);
  });

  it('with TSA_URL, the signer’s signature carries its timestamp and the seal’s DSS its revocation data: B-LTA', async () => {
    const tina = provider.addUser({ name: 'Tina Timestamp', email: 'tina@example.com', pin: '9999', level: 'qualified' });
    const tsa = await startLocalTsa();
    const port = await freePort();
    const stamped = await startTestApp({ env: { TSA_URL: tsa.url, PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}` } });
    const main = app;
    app = stamped;
    try {
      const team = await teamWithTrustService(['qualified']);
      const built = await envelopeFor(team, [{ identifier: 'tina', signatureLevel: 'qualified', agents: [{ info: { name: 'Tina Timestamp', email: 'tina@example.com' } }] }]);
      const token = await tokenFor(app, built.envelopeId, built.recipients.tina!);
      await authorizeAndSign((await finish(token)).data.submitSigning.trustSignature.authorizeUrl, { email: 'tina@example.com', pin: '9999' });
      expect(provider.signedCount(tina.credentialId)).toBe(1);
      expect(await sealWorker(app, team.teamId, []).drain()).toBe(1);
      const file = await downloadSealed(app, directory, team.apiKey, built.envelopeId, built.documentId, 'stamped.pdf');
      const signatures = (await restVerify(app, team.apiKey, fs.readFileSync(file))).body.payload.verification.signatures as any[];
      const [signer] = signatures;
      expect(signer).toMatchObject({ valid: true, level: 'B-LTA', signer: { subject: expect.stringContaining('Tina Timestamp'), level: 'qualified' } });
      // Revocation of the signer's certificate, from the DSS the seal added (the provider's OCSP answer).
      expect(signer.revocation).toMatchObject({ status: 'good' });
    } finally {
      app = main;
      await stamped.close();
      await tsa.close();
    }
  });

  it('an embedded session (a signing URL’s) comes back to a page saying the outcome: its credential never goes into a URL', async () => {
    const emma = provider.addUser({ name: 'Emma Embedded', email: 'emma@example.com', pin: '1212', level: 'advanced' });
    const team = await teamWithTrustService(['advanced']);
    const built = await envelopeFor(team, [{ identifier: 'emma', signatureLevel: 'advanced', agents: [{ info: { name: 'Emma Embedded', email: 'emma@example.com', embedded: true } }] }]);
    const url = (await restClient(app, team.apiKey).post(`/envelopes/${built.envelopeId}/recipients/${built.recipients.emma}/signing-url`, {})).body.payload.url as string;
    const opened = (await (await fetch(`${app.url}${new URL(url).pathname}`, { method: 'POST' })).json()) as { sessionToken: string };
    const finished = await finish(opened.sessionToken);
    const first = await atCallback(await atProvider(finished.data.submitSigning.trustSignature.authorizeUrl, { username: 'emma@example.com', pin: '1212', consent: 'yes' }));
    const response = await fetch(await atProvider(first.location!, { pin: '1212', consent: 'yes' }), { redirect: 'manual' });
    expect(response.status).toBe(200);
    expect(response.headers.get('location')).toBeNull();
    const page = await response.text();
    expect(page).toContain('Signed at your trust service');
    expect(page).not.toContain(opened.sessionToken);
    expect(provider.signedCount(emma.credentialId)).toBe(1);
  });

  it('a parallel signer’s draft is not drawn into a trust-service signature: the sealed file shows what that signer finally gave', async () => {
    provider.addUser({ name: 'Pia Parallel', email: 'pia@example.com', pin: '3434', level: 'advanced' });
    const team = await teamWithTrustService(['advanced']);
    const built = await envelopeFor(team, [
      { identifier: 'pia', order: 1, signatureLevel: 'advanced', agents: [{ info: { name: 'Pia Parallel', email: 'pia@example.com' } }] },
      {
        identifier: 'sam',
        order: 1,
        fields: [
          { identifier: 'sam-signature', required: true },
          { identifier: 'sam-note', type: 'text', required: true, view: { x: 300, y: 100, width: 200, height: 30 } },
        ],
      },
    ]);
    const samToken = await tokenFor(app, built.envelopeId, built.recipients.sam!);
    const sam = signingClient(app, samToken);
    const save = (text: string, complete: boolean) =>
      sam(`mutation($values: [SigningValueInput!], $complete: Boolean) { submitSigning(values: $values, complete: $complete) { recipient { completedAt } } }`, {
        values: [
          { fieldId: built.fields['sam-signature'], value: typedSignature },
          { fieldId: built.fields['sam-note'], value: { text } },
        ],
        complete,
      });
    expect((await save('DRAFTWORDING', false)).errors).toBeUndefined();
    const piaToken = await tokenFor(app, built.envelopeId, built.recipients.pia!);
    await authorizeAndSign((await finish(piaToken)).data.submitSigning.trustSignature.authorizeUrl, { email: 'pia@example.com', pin: '3434' });
    expect((await save('FINALWORDING', true)).errors).toBeUndefined();
    expect(await sealWorker(app, team.teamId, []).drain()).toBe(1);
    const file = await downloadSealed(app, directory, team.apiKey, built.envelopeId, built.documentId, 'parallel.pdf');
    const text = execFileSync('pdftotext', ['-enc', 'UTF-8', file, '-'], { encoding: 'utf8' });
    expect(text).toContain('FINALWORDING');
    expect(text).not.toContain('DRAFTWORDING');
    expect(pdfsig(file).match(/Signature is Valid/g)).toHaveLength(2);
  });

  it('sending is refused by name when the team no longer offers the level', async () => {
    const team = await teamWithTrustService(['advanced']);
    const built = await buildEnvelope(app, team.apiKey, { recipients: [{ identifier: 'a', signatureLevel: 'advanced' }] });
    const rest = restClient(app, team.apiKey);
    expect((await rest.patch('/team/settings', { trustServices: [] })).status).toBe(200);
    const sent = await rest.put(`/envelopes/${built.envelopeId}/send`);
    expect(sent.body.error.name).toBe('Envelope.NotSendable');
    expect(sent.body.error.context.issues).toContainEqual(
      expect.objectContaining({ path: 'recipients[a].signatureLevel', message: expect.stringContaining('Recipient.TrustServiceUnavailable') }),
    );
  });
});
