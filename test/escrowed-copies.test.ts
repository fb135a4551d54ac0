import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ESCROW_LABELS } from '../src/domain/signing/escrow.ts';
import { firstErrorName, restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { pdfsig } from './helpers/pdf-tools.ts';
import { buildEnvelope, signAndComplete, signingClient, tokenFor } from './helpers/signing.ts';

let app: TestApp;
let team: SeededTeam;
let directory: string;
beforeAll(async () => {
  app = await startTestApp();
  team = await seedTeam(app);
  directory = fs.mkdtempSync(path.join(os.tmpdir(), 'escrow-test-'));
}, 60_000);
afterAll(async () => {
  await app?.close();
  if (directory) fs.rmSync(directory, { recursive: true, force: true });
});

/** The file's text per page (pdftotext separates pages with a form feed), and pdfsig's report. */
function inspect(bytes: Buffer, name: string): { pages: string[]; signatures: string } {
  const file = path.join(directory, `${name}.pdf`);
  fs.writeFileSync(file, bytes);
  const text = execFileSync('pdftotext', ['-layout', file, '-'], { encoding: 'utf8' });
  return { pages: text.split('\f').slice(0, -1), signatures: pdfsig(file) };
}

async function signingDocument(token: string, documentId: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${app.url}/signing/documents/${documentId}`, { headers: { 'x-signing-token': token, ...headers } });
  expect(response.status).toBe(200);
  return Buffer.from(await response.arrayBuffer());
}

const normalise = (text: string) => text.replace(/\s+/g, ' ');

describe('escrowed copies', () => {
  it('before finalization a recipient’s copy is marked on every page and unsealed, in their language; after it, the sealed copy has no mark and a valid seal', async () => {
    const built = await buildEnvelope(app, team.apiKey, {
      name: 'Escrow',
      recipients: [{ identifier: 'ada' }, { identifier: 'can', agents: [{ info: { name: 'Can Yılmaz', email: 'can@example.com', locale: 'tr-TR' } }] }],
    });
    expect((await restClient(app, team.apiKey).put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
    const adaToken = await tokenFor(app, built.envelopeId, built.recipients.ada!);
    const canToken = await tokenFor(app, built.envelopeId, built.recipients.can!);

    // Ada (no language of her own; the page's, from the browser, is Turkish here, English otherwise).
    const english = inspect(await signingDocument(adaToken, built.documentId), 'ada-en');
    expect(english.pages).toHaveLength(2);
    for (const page of english.pages) expect(normalise(page)).toContain(ESCROW_LABELS['en-US']);
    expect(english.signatures).toMatch(/does not contain any signatures/);
    const turkishBrowser = inspect(await signingDocument(adaToken, built.documentId, { 'accept-language': 'tr-TR,tr;q=0.9' }), 'ada-tr');
    for (const page of turkishBrowser.pages) expect(normalise(page)).toContain(ESCROW_LABELS['tr-TR']);

    // Ada completes; her copy is still escrowed while Can has not. Can's is in his language whatever the browser says.
    expect((await signAndComplete(app, adaToken)).errors).toBeUndefined();
    const afterAda = inspect(await signingDocument(adaToken, built.documentId), 'ada-done');
    for (const page of afterAda.pages) expect(normalise(page)).toContain(ESCROW_LABELS['en-US']);
    expect(afterAda.signatures).toMatch(/does not contain any signatures/);
    const can = inspect(await signingDocument(canToken, built.documentId, { 'accept-language': 'en-US' }), 'can');
    expect(can.pages).toHaveLength(2);
    for (const page of can.pages) expect(normalise(page)).toContain(ESCROW_LABELS['tr-TR']);
    expect(can.signatures).toMatch(/does not contain any signatures/);
    // No executed copy yet on the GraphQL face either.
    expect(firstErrorName(await signingClient(app, adaToken)('{ signingFinalCopy { url } }'))).toBe('Envelope.NotFinalized');

    // The last completion: the signing route closes, and the final copy is the sealed one, unmarked.
    expect((await signAndComplete(app, canToken)).errors).toBeUndefined();
    const closed = await fetch(`${app.url}/signing/documents/${built.documentId}`, { headers: { 'x-signing-token': adaToken } });
    expect(closed.status).not.toBe(200);
    const link = await signingClient(app, adaToken)('{ signingFinalCopy { url } }');
    expect(link.errors).toBeUndefined();
    const final = await fetch(`${app.url}${new URL(link.data.signingFinalCopy.url).pathname}`);
    expect(final.status).toBe(200);
    expect(final.headers.get('x-artefact-sealed')).toBe('true');
    const sealed = inspect(Buffer.from(await final.arrayBuffer()), 'sealed');
    expect(sealed.pages).toHaveLength(2);
    for (const page of sealed.pages) {
      expect(normalise(page)).not.toContain(ESCROW_LABELS['en-US']);
      expect(normalise(page)).not.toContain(ESCROW_LABELS['tr-TR']);
    }
    expect(sealed.signatures).toContain('Signature Validation: Signature is Valid.');
  });
});
