/**
 * Fault: the object store hangs. Its process is stopped (SIGSTOP): the connections the service
 * holds stay open and the kernel still accepts new ones, but nothing is ever answered, unlike a
 * store that is down (connection refused), which blob-store-s3.test.ts covers. Before issue 31
 * uploads, downloads and /readyz waited for as long as the store hung: the S3 client's request
 * timeout only logged a warning.
 *
 * Promised (docs/operations.md, "… the object store hangs"):
 * - uploads (REST and GraphQL) and downloads that need the store answer 503 `Storage.Unavailable`
 *   with `Retry-After` once the store's deadlines pass (S3_REQUEST_TIMEOUT_MS,
 *   S3_OPERATION_TIMEOUT_MS), instead of hanging; the process stays up, with no 500;
 * - `/readyz` answers 503 (`blobStore: 'unavailable'`) within its own deadline, well before the
 *   store's deadlines pass;
 * - once the store answers again, so does everything.
 * No latency is measured: each call is given a generous limit, and hanging past it is the failure.
 */

import type { MikroORM } from '@mikro-orm/postgresql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makePdf } from '../fixtures/pdfs.ts';
import { uploadDocument, uploadDocumentThroughGraphql } from '../helpers/envelopes.ts';
import { asTestApp, type FaultTeam, openOrm, seedTeamIn, waitUntil } from '../helpers/faults.ts';
import { restClient, type TestApp } from '../helpers/harness.ts';
import { type PgCluster, startPgCluster } from '../helpers/pg-cluster.ts';
import { startTestS3, type TestS3 } from '../helpers/s3.ts';
import { type ServiceProcess, startService } from '../helpers/service.ts';

/**
 * The store's deadlines for this test: long enough that /readyz answering before them shows its
 * own deadline at work, short enough that the test does not wait out the defaults.
 */
const STORE_DEADLINE_MS = 20_000;
/** Far beyond every deadline: a call still unanswered then is hanging. */
const HANG_LIMIT_MS = 90_000;

let cluster: PgCluster;
let orm: MikroORM;
let s3: TestS3;
let service: ServiceProcess;
let team: FaultTeam;
let app: TestApp;

beforeAll(async () => {
  cluster = await startPgCluster();
  orm = await openOrm(cluster.databaseUrl);
  s3 = await startTestS3();
  service = await startService({
    databaseUrl: cluster.databaseUrl,
    env: {
      ...s3.env,
      S3_CONNECT_TIMEOUT_MS: '2000',
      S3_REQUEST_TIMEOUT_MS: String(STORE_DEADLINE_MS),
      S3_OPERATION_TIMEOUT_MS: String(STORE_DEADLINE_MS),
      RATE_LIMIT_PER_MINUTE: '0',
    },
  });
  team = await seedTeamIn(orm);
  app = asTestApp(service.url, orm);
});
afterAll(async () => {
  s3?.resume();
  await service?.stop();
  await orm?.close(true);
  await s3?.close();
  await cluster?.destroy();
});

/** A fetch that fails the test, rather than waiting forever, when nothing answers. */
function bounded(url: string, init: RequestInit = {}): Promise<Response> {
  return fetch(url, { ...init, signal: AbortSignal.timeout(HANG_LIMIT_MS) });
}

describe('a hung object store', () => {
  it('fails uploads and downloads with Storage.Unavailable and Retry-After instead of hanging; /readyz answers at once; all resumes when the store does', async () => {
    const rest = restClient(app, team.apiKey);
    const draft = await rest.post('/envelopes', { name: 'Before the store hangs' });
    expect(draft.status).toBe(200);
    const envelopeId = draft.body.payload.envelopeId as string;
    const uploaded = await uploadDocument(app, team.apiKey, envelopeId, { bytes: await makePdf({ pages: 1 }) });
    expect(uploaded.status, JSON.stringify(uploaded.body)).toBe(200);
    const documentId = uploaded.body.payload.document.id as string;
    expect((await bounded(`${service.url}/readyz`)).status).toBe(200);
    const pdf = await makePdf({ pages: 2 });

    s3.hang();
    try {
      const uploadForm = () => {
        const form = new FormData();
        form.append('document', new Blob([pdf as Uint8Array<ArrayBuffer>], { type: 'application/pdf' }), 'during-the-hang.pdf');
        return form;
      };
      const readiness = (async () => {
        // Readiness answers within its own deadline (1.5 s), long before the store's 20 s: a
        // probe limited to half of the store's deadline still gets its answer.
        const response = await fetch(`${service.url}/readyz`, { signal: AbortSignal.timeout(STORE_DEADLINE_MS / 2) });
        return { status: response.status, body: await response.json() };
      })();
      const restUpload = bounded(`${service.url}/api/v1/key/envelopes/${envelopeId}/documents`, { method: 'POST', headers: { 'x-service-api-key': team.apiKey }, body: uploadForm() });
      const graphqlUpload = uploadDocumentThroughGraphql(app, team.apiKey, envelopeId, { bytes: pdf });
      // A draft copy is rendered from a local copy of the original: fetched from the store.
      const download = bounded(`${service.url}/api/v1/key/envelopes/${envelopeId}/documents/${documentId}/pdf`, { headers: { 'x-service-api-key': team.apiKey } });

      expect(await readiness).toEqual({ status: 503, body: { status: 'not ready', database: 'ok', blobStore: 'unavailable' } });
      for (const answer of [await restUpload, await download]) {
        expect(answer.status).toBe(503);
        expect(((await answer.json()) as any).error.name).toBe('Storage.Unavailable');
        expect(Number(answer.headers.get('retry-after'))).toBeGreaterThan(0);
      }
      const graphql = await graphqlUpload;
      expect(graphql.body.errors?.[0]?.extensions?.code).toBe('Storage.Unavailable');
      // Still unanswered by the store, and still the same: readiness does not pile up on it.
      expect((await bounded(`${service.url}/readyz`)).status).toBe(503);
      expect(service.isRunning()).toBe(true);
    } finally {
      s3.resume();
    }

    await waitUntil('/readyz to see the store again', async () => ((await bounded(`${service.url}/readyz`)).status === 200 ? true : undefined), 60_000, 500);
    const after = await uploadDocument(app, team.apiKey, envelopeId, { bytes: pdf });
    expect(after.status, JSON.stringify(after.body)).toBe(200);
    const copy = await bounded(`${service.url}/api/v1/key/envelopes/${envelopeId}/documents/${documentId}/pdf`, { headers: { 'x-service-api-key': team.apiKey } });
    expect(copy.status).toBe(200);
    expect(service.unexpectedErrors()).toEqual([]);
  }, 240_000);
});
