/**
 * Seeds the data set through the service itself (CLI for teams, REST for everything else), so
 * the rows are exactly what the service writes: its ids, timestamps, JSON shapes and audit
 * events. Per envelope: 3 documents, 3 recipients with 2 inline agents each, 6 fields with one
 * view each (8 requests).
 */
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { type Child, startChild } from './processes.ts';

export type SeededTeam = { teamId: string; apiKey: string };

const REST = '/api/v1/key';
const RECIPIENTS = ['buyer', 'seller', 'witness'] as const;

/** A small valid two-page A4 PDF with some text, made once and uploaded for every document. */
export async function makeSeedPdf(): Promise<Uint8Array<ArrayBuffer>> {
  const pdf = await PDFDocument.create();
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  for (let page = 1; page <= 2; page += 1) {
    pdf.addPage([595, 842]).drawText(`Benchmark contract, page ${page}`, { x: 72, y: 770, size: 14, font });
  }
  // A copy with its own ArrayBuffer, which is what Blob accepts.
  return new Uint8Array(await pdf.save());
}

/** Creates teams with the CLI, a few at a time (each CLI run opens the database on its own). */
export async function createTeams(count: number, env: Record<string, string>, cwd: string, track: (child: Child) => Child): Promise<SeededTeam[]> {
  const teams: SeededTeam[] = new Array(count);
  await inParallel(count, 4, async (index) => {
    const name = `Bench team ${String(index + 1).padStart(2, '0')}`;
    const cli = track(startChild(`cli team create ${index + 1}`, ['src/cli/main.ts', 'team', 'create', '--name', name], env, { cwd }));
    const code = await new Promise<number | null>((resolve) => cli.process.once('exit', resolve));
    // stdout and stderr arrive interleaved: a warning written after the answer (Node's own, or a
    // log line at shutdown) must not be taken for it, so the answer is the line carrying the key.
    const line = cli
      .output()
      .trim()
      .split('\n')
      .reverse()
      .find((candidate) => candidate.includes('"apiKey"'));
    if (code !== 0 || !line) throw new Error(`team create failed (${code}): ${cli.output()}`);
    const created = JSON.parse(line) as { teamId: string; apiKey: string };
    if (typeof created.apiKey !== 'string' || typeof created.teamId !== 'string') throw new Error(`team create printed no key: ${cli.output()}`);
    teams[index] = { teamId: created.teamId, apiKey: created.apiKey };
  });
  return teams;
}

/** Runs `work(0..count-1)` with at most `concurrency` in flight; the first failure stops it. */
export async function inParallel(count: number, concurrency: number, work: (index: number) => Promise<void>): Promise<void> {
  let next = 0;
  let failed = false;
  const worker = async () => {
    while (!failed && next < count) {
      const index = next;
      next += 1;
      try {
        await work(index);
      } catch (error) {
        failed = true;
        throw error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
}

async function call<T>(baseUrl: string, apiKey: string, path: string, body: unknown): Promise<T> {
  const isForm = body instanceof FormData;
  const response = await fetch(`${baseUrl}${REST}${path}`, {
    method: 'POST',
    headers: isForm ? { 'x-service-api-key': apiKey } : { 'x-service-api-key': apiKey, 'content-type': 'application/json' },
    body: isForm ? body : JSON.stringify(body),
  });
  const text = await response.text();
  const parsed = JSON.parse(text) as { success: boolean; payload: T };
  if (!response.ok || !parsed.success) throw new Error(`POST ${path} answered ${response.status}: ${text.slice(0, 500)}`);
  return parsed.payload;
}

/** One envelope, built the way a caller would: create, upload, add recipients, place fields. */
async function seedEnvelope(baseUrl: string, team: SeededTeam, number: number, pdf: Blob): Promise<void> {
  const label = String(number).padStart(5, '0');
  const { envelopeId } = await call<{ envelopeId: string }>(baseUrl, team.apiKey, '/envelopes', {
    name: `Benchmark envelope ${label}`,
    expirationPeriodDays: 30,
    context: { batch: 'bench', number },
  });
  const documentIds: string[] = [];
  for (let order = 0; order < 3; order += 1) {
    const form = new FormData();
    form.set('document', pdf, `contract-${label}-${order + 1}.pdf`);
    form.set('name', `Contract ${label} part ${order + 1}`);
    form.set('order', String(order));
    const { document } = await call<{ document: { id: string } }>(baseUrl, team.apiKey, `/envelopes/${envelopeId}/documents`, form);
    documentIds.push(document.id);
  }
  const recipientIds: string[] = [];
  for (const [index, identifier] of RECIPIENTS.entries()) {
    const { recipient } = await call<{ recipient: { id: string } }>(baseUrl, team.apiKey, `/envelopes/${envelopeId}/recipients`, {
      recipient: {
        type: 'signer',
        identifier,
        roleName: identifier[0].toUpperCase() + identifier.slice(1),
        order: index,
        agents: [1, 2].map((person) => ({ info: { name: `${identifier} ${person} of ${label}`, email: `${identifier}${person}.${label}@example.com` } })),
      },
    });
    recipientIds.push(recipient.id);
  }
  const fields = RECIPIENTS.flatMap((identifier, index) => [
    {
      type: 'simple_signature',
      recipientId: recipientIds[index],
      identifier: `${identifier}-signature`,
      views: [{ documentId: documentIds[index], page: 1, location: { x: 72, y: 650 + 40 * index }, size: { width: 180, height: 36 } }],
    },
    {
      type: 'text',
      recipientId: recipientIds[index],
      identifier: `${identifier}-city`,
      required: true,
      views: [{ documentId: documentIds[index], page: 0, location: { x: 300.5, y: 120 + 30 * index }, size: { width: 120, height: 20 } }],
    },
  ]);
  await call(baseUrl, team.apiKey, `/envelopes/${envelopeId}/fields`, { fields });
}

/**
 * Seeds `count` envelopes spread evenly over the teams, `concurrency` envelopes at a time, and
 * prints progress every 10 %.
 */
export async function seedEnvelopes(options: { baseUrl: string; teams: SeededTeam[]; count: number; concurrency: number; log: (line: string) => void }): Promise<void> {
  const pdf = new Blob([await makeSeedPdf()], { type: 'application/pdf' });
  const started = Date.now();
  let done = 0;
  let nextReport = Math.ceil(options.count / 10);
  await inParallel(options.count, options.concurrency, async (index) => {
    await seedEnvelope(options.baseUrl, options.teams[index % options.teams.length], index + 1, pdf);
    done += 1;
    if (done >= nextReport || done === options.count) {
      nextReport += Math.ceil(options.count / 10);
      const seconds = (Date.now() - started) / 1000;
      options.log(`  seeded ${done}/${options.count} envelopes in ${seconds.toFixed(1)} s (${((done * 8) / seconds).toFixed(0)} requests/s)`);
    }
  });
}
