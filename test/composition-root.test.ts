/**
 * One composition root (issue 34 item 2): the tests run the jobs production runs, wired once.
 * The seal job fixes the certificate of completion itself; the test helpers' seal worker is the
 * main worker's own handler; no test helper wires the app "as main.ts wires it" again.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closingCertificateLocale } from '../src/domain/artefact/certificate.service.ts';
import { restClient, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { buildEnvelope, signAndComplete, tokenFor } from './helpers/signing.ts';
import { sealWorkerFor } from './helpers/workers.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app.close();
});

describe('one composition root', () => {
  it('the seal job the harness runs fixes the certificate of completion after sealing, as production does', async () => {
    const team = await seedTeam(app);
    const built = await buildEnvelope(app, team.apiKey, { recipients: [{ identifier: 'signer' }] });
    expect((await restClient(app, team.apiKey).put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
    expect((await signAndComplete(app, await tokenFor(app, built.envelopeId, built.recipients.signer!))).errors).toBeUndefined();
    const certificatesOf = async () =>
      (await app.orm.em.fork().getConnection().execute<{ certificates: Record<string, unknown> | null }[]>('select certificates from envelope where id = ?', [built.envelopeId]))[0]!
        .certificates;
    expect(await certificatesOf()).toBeNull();

    expect(await sealWorkerFor(app, team.teamId).drain()).toBe(1);

    // Fixed at closing in the locale downloads default to; the others on their first download (certificate.test.ts).
    const certificates = await certificatesOf();
    expect(Object.keys(certificates ?? {})).toEqual([closingCertificateLocale]);
  });

  it('the seal job has no optional hook a wiring could leave out', () => {
    const root = path.join(import.meta.dirname, '..');
    const offenders: string[] = [];
    for (const folder of ['test', 'bench', 'src']) {
      for (const entry of fs.readdirSync(path.join(root, folder), { recursive: true, withFileTypes: true })) {
        if (!entry.isFile() || !entry.name.endsWith('.ts') || entry.name === 'composition-root.test.ts') continue;
        const file = path.join(entry.parentPath, entry.name);
        const text = fs.readFileSync(file, 'utf8');
        // The seal job has no hook a caller could leave out.
        if (/afterSealing/.test(text)) offenders.push(`${path.relative(root, file)} (afterSealing)`);
      }
    }
    expect(offenders).toEqual([]);
  });

  it('main.ts, the test harness and the in-process bench build the app through the one composition root, and nothing wires it "as main.ts wires it" again', () => {
    const root = path.join(import.meta.dirname, '..');
    const read = (file: string) => fs.readFileSync(path.join(root, file), 'utf8');
    // The parts runtime.ts builds; built anywhere else, they would be a second wiring.
    const parts = /\b(createApp|createRateLimiter|startEnvelopeEvents|createPdfWorkerPool|createMainWorker|createWebhookWorker|createMailer)\(|new ApiKeyCache\(/;
    for (const file of ['src/main.ts', 'test/helpers/harness.ts', 'bench/graphql-nested.ts']) {
      expect(read(file), file).toMatch(/\bcreateRuntime\(/);
      expect(read(file).match(parts)?.[0], file).toBeUndefined();
    }
    const offenders: string[] = [];
    for (const folder of ['test', 'bench', 'src']) {
      for (const entry of fs.readdirSync(path.join(root, folder), { recursive: true, withFileTypes: true })) {
        if (!entry.isFile() || !entry.name.endsWith('.ts') || entry.name === 'composition-root.test.ts') continue;
        const file = path.join(entry.parentPath, entry.name);
        if (/as main\.ts wires (it|them)/.test(fs.readFileSync(file, 'utf8'))) offenders.push(path.relative(root, file));
      }
    }
    expect(offenders).toEqual([]);
  });
});
