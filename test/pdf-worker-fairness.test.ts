/**
 * One team cannot starve another's PDF work (issue 31, item 2): the PDF worker pool keeps waiting
 * tasks per team and serves them round-robin, one team holds at most threads − 1
 * workers, each team's queue is bounded on its own, and each kind of task has its own budget.
 *
 * Ordering, never latency: every task is queued in one synchronous run, before any thread has
 * loaded, so the order the pool takes them in is decided by its rules alone, not by the machine.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPdfWorkerPool, type PdfTaskKind, PdfWorkersBusyError, PdfWorkLimitError } from '../src/domain/pdf/worker-pool.ts';
import { makeManyTextOperatorsPdf, makePdf } from './fixtures/pdfs.ts';
import { uploadDocument } from './helpers/envelopes.ts';
import { restClient, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';

let directory: string;
let ordinary: string;
beforeAll(async () => {
  directory = fs.mkdtempSync(path.join(os.tmpdir(), 'pdf-fairness-'));
  ordinary = path.join(directory, 'ordinary.pdf');
  fs.writeFileSync(ordinary, await makePdf({ pages: 2 }));
});
afterAll(() => {
  fs.rmSync(directory, { recursive: true, force: true });
});

/** Inspects `ordinary` for `team`, recording the label in `answered` when its answer comes. */
function inspectAs(pool: ReturnType<typeof createPdfWorkerPool>, team: string, label: string, answered: string[]) {
  return pool.inspect(ordinary, { team }).then((inspection) => {
    answered.push(label);
    return inspection;
  });
}

describe('the PDF worker pool, fair by team', () => {
  it('with one worker: a task of team B queued behind ten of team A is the next one served', async () => {
    // Threads that load late (as on a busy machine): everything below is queued before any runs.
    const pool = createPdfWorkerPool({ threads: 1, workerUrl: new URL('./helpers/slow-start-pdf-worker.ts', import.meta.url) });
    try {
      const answered: string[] = [];
      const backlog = Array.from({ length: 10 }, (_, index) => inspectAs(pool, 'team-a', `A${index + 1}`, answered));
      const other = inspectAs(pool, 'team-b', 'B1', answered);
      await Promise.all([...backlog, other]);
      // A1 had the worker when B1 came; B1 goes next, then A's backlog.
      expect(answered).toEqual(['A1', 'B1', 'A2', 'A3', 'A4', 'A5', 'A6', 'A7', 'A8', 'A9', 'A10']);
    } finally {
      await pool.close();
    }
  }, 120_000);

  it('within a team, a task queued as of an earlier time (a seal job started before) goes ahead of the tasks queued since', async () => {
    const pool = createPdfWorkerPool({ threads: 1, workerUrl: new URL('./helpers/slow-start-pdf-worker.ts', import.meta.url) });
    try {
      const answered: string[] = [];
      const startedAt = Date.now() - 60_000;
      const first = inspectAs(pool, 'team-a', 'A1', answered);
      const later = ['A2', 'A3'].map((label) => inspectAs(pool, 'team-a', label, answered));
      // A job's next document, queued as of when its job started: behind A1 (already taken), ahead of A2 and A3.
      const job = pool.inspect(ordinary, { team: 'team-a', queuedSince: startedAt }).then(() => void answered.push('J'));
      await Promise.all([first, ...later, job]);
      expect(answered).toEqual(['A1', 'J', 'A2', 'A3']);
    } finally {
      await pool.close();
    }
  }, 120_000);

  it('with one worker and three teams: each team in turn, however many tasks each queued', async () => {
    const pool = createPdfWorkerPool({ threads: 1 });
    try {
      const answered: string[] = [];
      const tasks = [
        ...['A1', 'A2', 'A3', 'A4'].map((label) => inspectAs(pool, 'team-a', label, answered)),
        ...['B1', 'B2'].map((label) => inspectAs(pool, 'team-b', label, answered)),
        inspectAs(pool, 'team-c', 'C1', answered),
      ];
      await Promise.all(tasks);
      expect(answered).toEqual(['A1', 'B1', 'C1', 'A2', 'B2', 'A3', 'A4']);
    } finally {
      await pool.close();
    }
  }, 120_000);

  it('with two workers: one team never holds both; the other team’s task starts at once, before the first team’s second', async () => {
    const started: { kind: PdfTaskKind; team: string }[] = [];
    const pool = createPdfWorkerPool({ threads: 2, onTaskStart: (task) => started.push(task) });
    try {
      const answered: string[] = [];
      const backlog = Array.from({ length: 6 }, (_, index) => inspectAs(pool, 'team-a', `A${index + 1}`, answered));
      const other = inspectAs(pool, 'team-b', 'B1', answered);
      // Taken at once: the second worker stayed free for another team.
      expect(started.map((task) => task.team)).toEqual(['team-a', 'team-b']);
      await Promise.all([...backlog, other]);
      expect(started.map((task) => task.team)).toEqual(['team-a', 'team-b', 'team-a', 'team-a', 'team-a', 'team-a', 'team-a']);
      // Team A's tasks ran one after another on one worker, in the order queued.
      expect(answered.filter((label) => label.startsWith('A'))).toEqual(['A1', 'A2', 'A3', 'A4', 'A5', 'A6']);
    } finally {
      await pool.close();
    }
  }, 120_000);

  it('bounds each team’s queue on its own: a team that fills its queue is refused as busy, another team’s task is still taken', async () => {
    const pool = createPdfWorkerPool({ threads: 1, maxQueue: 2 });
    try {
      const answered: string[] = [];
      const accepted = ['A1', 'A2', 'A3'].map((label) => inspectAs(pool, 'team-a', label, answered));
      const refused = await inspectAs(pool, 'team-a', 'A4', answered).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(PdfWorkersBusyError);
      expect(refused).toMatchObject({ reason: 'queue_full' });
      const other = inspectAs(pool, 'team-b', 'B1', answered);
      await Promise.all([...accepted, other]);
      expect(answered).toEqual(['A1', 'B1', 'A2', 'A3']);
    } finally {
      await pool.close();
    }
  }, 120_000);
});

describe('the PDF worker pool, a budget per kind of task', () => {
  it('stops reading tags at the placement budget while inspecting the same file keeps its own', async () => {
    // 400 000 text operators: under the inspector's limit, and more than a second of pdf.js.
    const file = path.join(directory, 'text.pdf');
    fs.writeFileSync(file, makeManyTextOperatorsPdf(400_000));
    const pool = createPdfWorkerPool({ threads: 1, budgetsMs: { 'read-placements': 200 } });
    try {
      expect((await pool.inspect(file)).pageCount).toBe(1);
      const stopped = await pool.readPlacements({ path: file, from: 'tags', maxTags: 500 }).catch((error: unknown) => error);
      expect(stopped).toBeInstanceOf(PdfWorkLimitError);
      expect(stopped).toMatchObject({ limit: 'time', value: 200 });
      // The worker was replaced: the next task is served.
      expect((await pool.inspect(ordinary)).pageCount).toBe(2);
    } finally {
      await pool.close();
    }
  }, 120_000);
});

describe('PDF work queued by the team that asked', () => {
  let app: TestApp;
  const started: { kind: PdfTaskKind; team: string }[] = [];
  beforeAll(async () => {
    app = await startTestApp({ pdfWorkers: { onTaskStart: (task) => started.push(task) } });
  });
  afterAll(async () => {
    await app.close();
  });

  it('an upload and a placement are queued under the caller’s team', async () => {
    const team = await seedTeam(app);
    const rest = restClient(app, team.apiKey);
    const envelopeId = (await rest.post('/envelopes', { name: 'Queued by team' })).body.payload.envelopeId;
    const uploaded = await uploadDocument(app, team.apiKey, envelopeId, { bytes: await makePdf({ pages: 1 }) });
    expect(uploaded.status).toBe(200);
    const placed = await rest.post(`/envelopes/${envelopeId}/documents/${uploaded.body.payload.document.id}/place-fields`, { from: 'tags' });
    expect(placed.status, JSON.stringify(placed.body)).toBe(200);
    expect(started).toEqual([
      { kind: 'inspect', team: team.teamId },
      { kind: 'read-placements', team: team.teamId },
    ]);
  }, 60_000);
});
