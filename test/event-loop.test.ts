/**
 * Nothing a caller sends may hold the event loop: while one team's hostile pattern or PDF is
 * being checked, every other request (and /healthz) must still be answered.
 *
 * What is asserted here holds however busy the machine is: hostile patterns are answered (RE2
 * matches in linear time; the backtracking engine it replaced took 23 s, past any test timeout),
 * and /healthz is answered while a hostile PDF's inspection is still pending, which an inspection
 * on the event loop cannot allow, whatever the speed of the cores. How long the loop stalls is a
 * latency figure, and a loaded machine fails any budget for it: it is measured by
 * `npm run bench:event-loop` (bench/event-loop.ts), not asserted here.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createPdfWorkerPool, PdfWorkLimitError } from '../src/domain/pdf/worker-pool.ts';
import { makeHugePageDictionaryPdf, makePdf } from './fixtures/pdfs.ts';
import { createDraftWithDocumentAndSigner, uploadDocument, uploadDocumentThroughGraphql } from './helpers/envelopes.ts';
import { firstErrorName, graphqlClient, restClient, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';

let app: TestApp;
beforeAll(async () => {
  // The hostile PDFs below take seconds each on one worker thread; on a loaded machine the fourth
  // waited past the 30 s queue wait (Server.Busy) or its inspection past 10 s. Those limits have
  // their own tests (the `limited` app below); here they would only measure the machine.
  app = await startTestApp({ pdfWorkers: { queueTimeoutMs: 110_000, taskTimeoutMs: 100_000 } });
});
afterAll(async () => {
  await app.close();
});

const createFieldsMutation = 'mutation($envelopeId: ID!, $fields: [FieldInput!]!) { createFields(envelopeId: $envelopeId, fields: $fields) { id identifier } }';
const updateFieldMutation = 'mutation($envelopeId: ID!, $fieldId: ID!, $input: UpdateFieldInput!) { updateField(envelopeId: $envelopeId, fieldId: $fieldId, input: $input) { id value } }';

async function newDraft(testApp: TestApp = app) {
  const team = await seedTeam(testApp);
  const draft = await createDraftWithDocumentAndSigner(testApp, team.apiKey);
  return { ...draft, team, rest: restClient(testApp, team.apiKey), graphql: graphqlClient(testApp, team.apiKey) };
}
type Draft = Awaited<ReturnType<typeof newDraft>>;

function textField(draft: Draft, identifier: string, extra: Record<string, unknown>) {
  return {
    type: 'text',
    recipientId: draft.signerId,
    identifier,
    views: [{ documentId: draft.documentId, page: 0, location: { x: 50, y: 50 }, size: { width: 120, height: 30 } }],
    ...extra,
  };
}

describe('user patterns', () => {
  // (a+)+b against 32 a's: 2^32 ways to split the a's, all tried by a backtracking engine (23 s).
  const hostile = { config: { pattern: '(a+)+b' }, value: { text: 'a'.repeat(32) } };
  const mismatch = { path: 'fields[0].value.text', message: "must match the field's pattern /(a+)+b/" };

  it('checks a nested-quantifier pattern on both faces (RE2: linear time, where backtracking took 23 s)', async () => {
    const draft = await newDraft();
    const [rest, graphql] = await Promise.all([
      draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields: [textField(draft, 'rest', hostile)] }),
      draft.graphql(createFieldsMutation, { envelopeId: draft.envelopeId, fields: [textField(draft, 'graphql', hostile)] }),
    ]);
    expect(rest.status).toBe(400);
    expect(rest.body.error.name).toBe('Request.Invalid');
    expect(rest.body.error.context.issues).toEqual([mismatch]);
    expect(firstErrorName(graphql)).toBe('Request.Invalid');
    expect(graphql.errors![0].extensions.context.issues).toEqual([mismatch]);

    // The same pattern still does its job: a text that matches is stored.
    const matching = await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, {
      fields: [textField(draft, 'matching', { config: { pattern: '(a+)+b' }, value: { text: `${'a'.repeat(31)}b` } })],
    });
    expect(matching.status).toBe(200);
  }, 60_000);

  it('checks a hostile value sent by updateField on both faces', async () => {
    const draft = await newDraft();
    const created = await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields: [textField(draft, 'code', { config: { pattern: '(a+)+b' } })] });
    expect(created.status).toBe(200);
    const fieldId = created.body.payload.fields[0].id;
    const [rest, graphql] = await Promise.all([
      draft.rest.patch(`/envelopes/${draft.envelopeId}/fields/${fieldId}`, { field: { value: hostile.value } }),
      draft.graphql(updateFieldMutation, { envelopeId: draft.envelopeId, fieldId, input: { value: hostile.value } }),
    ]);
    const issue = { path: 'field.value.text', message: "must match the field's pattern /(a+)+b/" };
    expect(rest.status).toBe(400);
    expect(rest.body.error.context.issues).toEqual([issue]);
    expect(firstErrorName(graphql)).toBe('Request.Invalid');
    expect(graphql.errors![0].extensions.context.issues).toEqual([issue]);
  }, 60_000);

  it('refuses, on both faces, a pattern RE2 cannot match in linear time, naming the supported syntax', async () => {
    const draft = await newDraft();
    for (const pattern of ['(a)\\1', '(?=a)a']) {
      const field = textField(draft, 'backreference', { config: { pattern } });
      const rest = await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields: [field] });
      const graphql = await draft.graphql(createFieldsMutation, { envelopeId: draft.envelopeId, fields: [field] });
      for (const issues of [rest.body.error.context.issues, graphql.errors![0].extensions.context.issues]) {
        expect(issues).toEqual([{ path: 'fields[0].config.pattern', message: expect.stringMatching(/^must use RE2 syntax, which is matched in linear time: backreferences/) }]);
      }
      expect(rest.status).toBe(400);
      expect(firstErrorName(graphql)).toBe('Request.Invalid');
    }
    const fields = await draft.rest.get(`/envelopes/${draft.envelopeId}?includeFields=true`);
    expect(fields.body.payload.fields).toEqual([]);
  });

  it('refuses, on both faces, a pattern too costly for its maxLength', async () => {
    const draft = await newDraft();
    const field = textField(draft, 'costly', { config: { pattern: '(.?){150}', maxLength: 10_000 } });
    const rest = await draft.rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields: [field] });
    const graphql = await draft.graphql(createFieldsMutation, { envelopeId: draft.envelopeId, fields: [field] });
    for (const issues of [rest.body.error.context.issues, graphql.errors![0].extensions.context.issues]) {
      expect(issues).toEqual([{ path: 'fields[0].config.pattern', message: expect.stringMatching(/^is too complex for maxLength 10000: /) }]);
    }
  });
});

async function uploadThroughGraphql(testApp: TestApp, apiKey: string, envelopeId: string, bytes: Uint8Array) {
  return (await uploadDocumentThroughGraphql(testApp, apiKey, envelopeId, { bytes })).body as { data?: any; errors?: any[] };
}

function uploadThroughRest(testApp: TestApp, apiKey: string, envelopeId: string, bytes: Uint8Array) {
  return uploadDocument(testApp, apiKey, envelopeId, { bytes });
}

function stagingFiles(testApp: TestApp): string[] {
  const directory = path.join(testApp.dataDir, 'blobs', 'tmp');
  return fs.existsSync(directory) ? fs.readdirSync(directory) : [];
}

describe('PDF inspection', () => {
  it('inspects hostile PDFs off the event loop: /healthz is answered while their inspections are pending, and each is accepted', async () => {
    const draft = await newDraft();
    // ~4.5 MB, one page, a page dictionary of 300 000 keys: a second or more of parsing each,
    // which on the event loop (the old code) stalled everything for that long, file after file.
    const hostile = makeHugePageDictionaryPdf(300_000);
    const workers = app.dependencies.pdfWorkers;
    const inspect = workers.inspect;
    const pending = new Set<Promise<unknown>>();
    let inspectionStarted!: () => void;
    const started = new Promise<void>((resolve) => (inspectionStarted = resolve));
    workers.inspect = (...args: Parameters<typeof inspect>) => {
      const inspection = inspect(...args);
      pending.add(inspection);
      void inspection.finally(() => pending.delete(inspection)).catch(() => undefined);
      inspectionStarted();
      return inspection;
    };
    try {
      const uploads = Promise.all([
        uploadThroughRest(app, draft.team.apiKey, draft.envelopeId, hostile),
        uploadThroughRest(app, draft.team.apiKey, draft.envelopeId, hostile),
        uploadThroughGraphql(app, draft.team.apiKey, draft.envelopeId, hostile),
        uploadThroughGraphql(app, draft.team.apiKey, draft.envelopeId, hostile),
      ]);
      await started;
      // An inspection on the event loop would hold this answer until it had finished: an order
      // of events, not a duration, so no busy machine can fail it.
      const health = await fetch(`${app.url}/healthz`);
      expect(health.status).toBe(200);
      expect(pending.size).toBeGreaterThan(0);
      const answers = await uploads;
      // Hostile but valid: each is accepted, only it no longer costs anyone else anything.
      expect([
        answers[0].body.payload?.document?.pageCount,
        answers[1].body.payload?.document?.pageCount,
        answers[2].data?.addDocument?.pageCount,
        answers[3].data?.addDocument?.pageCount,
      ]).toEqual([1, 1, 1, 1]);
    } finally {
      workers.inspect = inspect;
    }
  }, 120_000);
});

describe('PDF inspection limits', () => {
  // One worker, no queue, one second per file: small enough to reach every limit quickly.
  let limited: TestApp;
  beforeAll(async () => {
    limited = await startTestApp({ pdfWorkers: { threads: 1, maxQueue: 0, taskTimeoutMs: 1000 } });
  });
  afterAll(async () => {
    await limited.close();
  });
  // ~15 MB, 1 000 000 keys: about two seconds of parsing, past the one-second limit.
  let slow: Uint8Array;
  beforeAll(() => {
    slow = makeHugePageDictionaryPdf(1_000_000);
  });

  async function documentCount(draft: Draft): Promise<number> {
    const read = await draft.rest.get(`/envelopes/${draft.envelopeId}?includeDocuments=true`);
    return read.body.payload.documents.length;
  }

  it('refuses a file over the time limit with Document.InspectionLimitExceeded (422) on REST, keeping nothing', async () => {
    const draft = await newDraft(limited);
    const rest = await uploadThroughRest(limited, draft.team.apiKey, draft.envelopeId, slow);
    expect(rest.status).toBe(422);
    expect(rest.body.error).toMatchObject({ name: 'Document.InspectionLimitExceeded', context: { limit: 'time', limitMs: 1000 } });
    expect(rest.body.error.description).toMatch(/more than 1 s/);
    expect(stagingFiles(limited)).toEqual([]);
    expect(await documentCount(draft)).toBe(1);
    // The stopped worker was replaced: the next file is inspected as usual.
    const ordinary = await uploadThroughRest(limited, draft.team.apiKey, draft.envelopeId, await makePdf({ pages: 2 }));
    expect(ordinary.body.payload.document.pageCount).toBe(2);
  }, 60_000);

  it('refuses a file over the time limit with Document.InspectionLimitExceeded on GraphQL, keeping nothing', async () => {
    const draft = await newDraft(limited);
    const graphql = await uploadThroughGraphql(limited, draft.team.apiKey, draft.envelopeId, slow);
    expect(graphql.errors?.[0]?.extensions?.code).toBe('Document.InspectionLimitExceeded');
    expect(graphql.errors?.[0]?.extensions?.context).toMatchObject({ limit: 'time', limitMs: 1000 });
    expect(stagingFiles(limited)).toEqual([]);
    expect(await documentCount(draft)).toBe(1);
    const ordinary = await uploadThroughGraphql(limited, draft.team.apiKey, draft.envelopeId, await makePdf({ pages: 2 }));
    expect(ordinary.data.addDocument.pageCount).toBe(2);
  }, 60_000);
});

describe('PDF workers all taken', () => {
  // One worker, no queue, and a time limit long enough that the slow file keeps the worker until
  // it is done, however busy the machine: the two uploads sent meanwhile find no worker free.
  let occupied: TestApp;
  const inspecting: string[] = [];
  beforeAll(async () => {
    occupied = await startTestApp({ pdfWorkers: { threads: 1, maxQueue: 0, taskTimeoutMs: 120_000 } });
    // Every file handed to the pool, in order: once the slow one is there, the worker is taken.
    const workers = occupied.dependencies.pdfWorkers;
    const inspect = workers.inspect;
    workers.inspect = (filePath) => {
      inspecting.push(filePath);
      return inspect(filePath);
    };
  });
  afterAll(async () => {
    await occupied.close();
  });

  it('answers Server.Busy (503) on both faces when every worker is taken and the queue is full', async () => {
    const draft = await newDraft(occupied);
    const before = inspecting.length;
    // ~4.5 MB, 300 000 keys: a second or more of parsing (the two small uploads below take
    // milliseconds), accepted in the end: nothing here is over a limit.
    const slow = makeHugePageDictionaryPdf(300_000);
    const occupying = uploadThroughRest(occupied, draft.team.apiKey, draft.envelopeId, slow);
    while (inspecting.length === before) await sleep(10);
    const ordinary = await makePdf({ pages: 1 });
    const [rest, graphql] = await Promise.all([
      uploadThroughRest(occupied, draft.team.apiKey, draft.envelopeId, ordinary),
      uploadThroughGraphql(occupied, draft.team.apiKey, draft.envelopeId, ordinary),
    ]);
    expect(rest.status).toBe(503);
    expect(rest.body.error).toMatchObject({ name: 'Server.Busy', context: { reason: 'queue_full' } });
    expect(graphql.errors?.[0]?.extensions?.code).toBe('Server.Busy');
    // The file that held the worker is inspected to the end and stored; the refused ones are not.
    const held = await occupying;
    expect(held.status).toBe(200);
    expect(held.body.payload.document.pageCount).toBe(1);
    expect(stagingFiles(occupied)).toEqual([]);
    const read = await draft.rest.get(`/envelopes/${draft.envelopeId}?includeDocuments=true`);
    expect(read.body.payload.documents).toHaveLength(2);
  }, 120_000);
});

describe('PDF worker pool', () => {
  it("charges a file only for its own inspection, never for a worker's start-up: on a fresh pool and right after a worker is stopped", async () => {
    const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'pdf-workers-'));
    // One second per file, and threads that load 1.5 s later than usual (as on a busy machine):
    // a file charged for a thread's start would be over its limit every time.
    const pool = createPdfWorkerPool({ threads: 1, taskTimeoutMs: 1000, workerUrl: new URL('./helpers/slow-start-pdf-worker.ts', import.meta.url) });
    try {
      const slow = path.join(directory, 'slow.pdf');
      fs.writeFileSync(slow, makeHugePageDictionaryPdf(1_000_000));
      const ordinary = path.join(directory, 'ordinary.pdf');
      fs.writeFileSync(ordinary, await makePdf({ pages: 3 }));
      // The pool's only thread is still loading.
      expect((await pool.inspect(ordinary)).pageCount).toBe(3);
      for (let round = 0; round < 2; round += 1) {
        // A file waiting behind one that is stopped goes to the stopped worker's replacement.
        const [stopped, waiting] = await Promise.all([pool.inspect(slow).catch((error: unknown) => error), pool.inspect(ordinary)]);
        expect(stopped).toBeInstanceOf(PdfWorkLimitError);
        expect(stopped).toMatchObject({ limit: 'time', value: 1000 });
        expect(waiting.pageCount).toBe(3);
        // A file sent the moment a worker is stopped, while its replacement loads.
        const refusal = await pool.inspect(slow).catch((error: unknown) => error);
        expect(refusal).toMatchObject({ limit: 'time', value: 1000 });
        expect((await pool.inspect(ordinary)).pageCount).toBe(3);
      }
    } finally {
      await pool.close();
      fs.rmSync(directory, { recursive: true, force: true });
    }
  }, 120_000);

  it('starts no thread before the first file, ends a thread idle for idleExitMs, and starts a fresh one for the next file', async () => {
    const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'pdf-workers-'));
    const pool = createPdfWorkerPool({ threads: 1, idleExitMs: 300 });
    try {
      const ordinary = path.join(directory, 'ordinary.pdf');
      fs.writeFileSync(ordinary, await makePdf({ pages: 2 }));
      expect(pool.threads).toBe(0);
      expect((await pool.inspect(ordinary)).pageCount).toBe(2);
      expect(pool.threads).toBe(1);
      // Back to back, files keep the thread (each answer restarts its idle time).
      for (let file = 0; file < 3; file += 1) expect((await pool.inspect(ordinary)).pageCount).toBe(2);
      expect(pool.threads).toBe(1);
      await vi.waitFor(() => expect(pool.threads).toBe(0), { timeout: 30_000, interval: 50 });
      expect((await pool.inspect(ordinary)).pageCount).toBe(2);
      expect(pool.threads).toBe(1);
    } finally {
      await pool.close();
      fs.rmSync(directory, { recursive: true, force: true });
    }
  }, 60_000);

  it('ends a worker that exceeds its heap limit, refuses that file as a memory limit, and goes on with a fresh worker', async () => {
    const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'pdf-workers-'));
    const pool = createPdfWorkerPool({ threads: 1, maxHeapMb: 32, taskTimeoutMs: 30_000 });
    try {
      const hungry = path.join(directory, 'hungry.pdf');
      // 300 000 parsed entries need far more than 32 MB of heap.
      fs.writeFileSync(hungry, makeHugePageDictionaryPdf(300_000));
      const ordinary = path.join(directory, 'ordinary.pdf');
      fs.writeFileSync(ordinary, await makePdf({ pages: 3 }));
      const refusal = await pool.inspect(hungry).catch((error: unknown) => error);
      expect(refusal).toBeInstanceOf(PdfWorkLimitError);
      expect(refusal).toMatchObject({ limit: 'memory', value: 32 });
      expect((await pool.inspect(ordinary)).pageCount).toBe(3);
    } finally {
      await pool.close();
      fs.rmSync(directory, { recursive: true, force: true });
    }
  }, 60_000);
});
