import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { degrees, PDFDocument } from 'pdf-lib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RenderField, RenderStamp } from '../src/domain/pdf/render.ts';
import { createPdfWorkerPool, type PdfWorkers } from '../src/domain/pdf/worker-pool.ts';
import { graphqlClient, restClient, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { blackPngDataUrl, pdfsig, wordBoxes } from './helpers/pdf-tools.ts';
import { buildEnvelope, signAndComplete, tokenFor } from './helpers/signing.ts';
import { sealWorkerFor } from './helpers/workers.ts';

/*
 * Visible stamps (issue 23): each sealed page carries the envelope id in its bottom margin, and
 * each signature a caption (signer, UTC time) inside its own field's box, the signature shrunk
 * above it. Checked as a reader sees it: word boxes from `pdftotext -bbox -cropbox`.
 */

type Box = { x: number; y: number; width: number; height: number };
type Word = ReturnType<typeof wordBoxes>[number][number];

/** The displayed size of each page (the CropBox, turned by /Rotate), as pdftotext reports it. */
function pageSizes(file: string): { width: number; height: number }[] {
  const html = execFileSync('pdftotext', ['-bbox', '-cropbox', file, '-'], { encoding: 'utf8' });
  return [...html.matchAll(/<page width="([\d.]+)" height="([\d.]+)">/g)].map((match) => ({ width: Number(match[1]), height: Number(match[2]) }));
}

const inside = (word: Word, box: Box, slack = 0.5) =>
  word.xMin >= box.x - slack && word.xMax <= box.x + box.width + slack && word.yMin >= box.y - slack && word.yMax <= box.y + box.height + slack;

/** Every word of `text` found on the page, each lying in `box` and in no other of `boxes`. */
function expectCaptionIn(words: Word[], text: string, box: Box, boxes: Box[]) {
  for (const part of text.split(' ')) {
    const found = words.filter((word) => word.text === part && inside(word, box));
    expect(found.length, `"${part}" inside ${JSON.stringify(box)}: ${JSON.stringify(words.filter((word) => word.text === part))}`).toBeGreaterThan(0);
    for (const other of boxes.filter((candidate) => candidate !== box)) for (const word of found) expect(inside(word, other)).toBe(false);
  }
}

describe('stamps as drawn, on every page geometry', () => {
  let workers: PdfWorkers;
  let directory: string;
  beforeAll(() => {
    workers = createPdfWorkerPool({ threads: 1 });
    directory = fs.mkdtempSync(path.join(os.tmpdir(), 'stamps-'));
  });
  afterAll(async () => {
    await workers.close();
    fs.rmSync(directory, { recursive: true, force: true });
  });

  // `displayed`: the visible box turned by /Rotate, the page as a reader sees it (pdftotext reports the unturned size).
  const pages: {
    name: string;
    size: [number, number];
    rotate?: number;
    mediaBox?: [number, number, number, number];
    cropBox?: [number, number, number, number];
    displayed: [number, number];
  }[] = [
    { name: 'A4', size: [595.28, 841.89], displayed: [595.28, 841.89] },
    { name: 'Letter rotated 90', size: [612, 792], rotate: 90, displayed: [792, 612] },
    { name: 'A4 rotated 180', size: [595.28, 841.89], rotate: 180, displayed: [595.28, 841.89] },
    { name: 'Letter rotated 270', size: [612, 792], rotate: 270, displayed: [792, 612] },
    { name: 'offset MediaBox with a CropBox inside', size: [612, 792], mediaBox: [100, 200, 612, 792], cropBox: [150, 250, 512, 692], displayed: [512, 692] },
  ];
  const boxes = {
    typed: { x: 40, y: 60, width: 180, height: 50 },
    drawn: { x: 240, y: 60, width: 120, height: 60 },
    biometric: { x: 40, y: 140, width: 100, height: 40 },
  } satisfies Record<string, Box>;
  const stamp: RenderStamp = {
    envelopeLine: 'Envelope 6f1c2a3b-1111-4222-8333-944455566677',
    captions: {
      a: { signer: 'Ayşe Yılmaz-Öztürk', at: '2026-11-26 14:05 UTC' },
      b: { signer: 'Bob Stone', at: '2026-11-26 14:07 UTC' },
      c: { signer: 'Cem Kaya', at: '2026-11-26 14:09 UTC' },
    },
  };

  it.each(pages.map((spec, index) => [spec.name, index] as const))(
    'on %s: the envelope line in the bottom margin, each caption inside its own field under a shrunk signature',
    async (_name, index) => {
      const pdf = await PDFDocument.create();
      const spec = pages[index]!;
      const page = pdf.addPage(spec.size);
      if (spec.mediaBox) page.setMediaBox(...spec.mediaBox);
      if (spec.cropBox) page.setCropBox(...spec.cropBox);
      if (spec.rotate) page.setRotation(degrees(spec.rotate));
      const source = path.join(directory, `source-${index}.pdf`);
      fs.writeFileSync(source, await pdf.save());
      const at = (box: Box) => [{ page: 0, ...box }];
      const fields: RenderField[] = [
        { type: 'simple_signature', recipientId: 'a', config: {}, value: { kind: 'typed', text: 'Ayse Yilmaz', font: 'cursive' }, views: at(boxes.typed) },
        { type: 'simple_signature', recipientId: 'b', config: {}, value: { kind: 'drawn', image: blackPngDataUrl(40, 20) }, views: at(boxes.drawn) },
        {
          type: 'biometric_signature',
          recipientId: 'c',
          config: {},
          value: {
            strokes: [
              [
                { x: 0, y: 0, t: 0, p: 0.5 },
                { x: 80, y: 30, t: 10, p: 0.5 },
              ],
            ],
          },
          views: at(boxes.biometric),
        },
      ];
      const output = path.join(directory, `stamped-${index}.pdf`);
      await workers.render({ sourcePath: source, outputPath: output, fields, draft: false, stamp });
      const words = wordBoxes(output)[0]!;
      const size = { width: spec.displayed[0], height: spec.displayed[1] };
      // Every word on the visible page.
      for (const word of words) {
        expect(word.xMin).toBeGreaterThanOrEqual(0);
        expect(word.yMin).toBeGreaterThanOrEqual(0);
        expect(word.xMax).toBeLessThanOrEqual(size.width + 0.5);
        expect(word.yMax).toBeLessThanOrEqual(size.height + 0.5);
      }
      const id = words.find((word) => word.text === '6f1c2a3b-1111-4222-8333-944455566677');
      const label = words.find((word) => word.text === 'Envelope');
      expect(id, JSON.stringify(words)).toBeDefined();
      expect(label!.yMin).toBeGreaterThanOrEqual(size.height - 12);
      expect(id!.yMin).toBeGreaterThanOrEqual(size.height - 12);
      const all = Object.values(boxes);
      expectCaptionIn(words, 'Ayşe Yılmaz-Öztürk 2026-11-26 14:05 UTC', boxes.typed, all);
      expectCaptionIn(words, 'Bob Stone 2026-11-26 14:07 UTC', boxes.drawn, all);
      expectCaptionIn(words, 'Cem Kaya 2026-11-26 14:09 UTC', boxes.biometric, all);
      // The typed signature sits above its caption, inside the box.
      const signature = words.find((word) => word.text === 'Yilmaz')!;
      const caption = words.find((word) => word.text === 'Yılmaz-Öztürk')!;
      expect(inside(signature, boxes.typed)).toBe(true);
      expect(signature.yMax).toBeLessThanOrEqual(caption.yMin + 0.5);
    },
  );
});

describe('the stamp setting, sealed', () => {
  let app: TestApp;
  let directory: string;
  beforeAll(async () => {
    app = await startTestApp();
    directory = fs.mkdtempSync(path.join(os.tmpdir(), 'stamps-app-'));
  });
  afterAll(async () => {
    await app.close();
    fs.rmSync(directory, { recursive: true, force: true });
  });

  const ayseBox = { x: 60, y: 300, width: 200, height: 60 };
  const bobBox = { x: 300, y: 300, width: 200, height: 60 };

  async function sealedEnvelope(apiKey: string, teamId: string, options: { stamp?: boolean } = {}) {
    const built = await buildEnvelope(app, apiKey, {
      ...options,
      recipients: [
        { identifier: 'ayse', agents: [{ info: { name: 'Ayşe Yılmaz', email: 'ayse@example.com' } }], fields: [{ identifier: 'ayse-signature', view: ayseBox }] },
        { identifier: 'bob', agents: [{ info: { name: 'Bob Stone', email: 'bob@example.com' } }], fields: [{ identifier: 'bob-signature', view: bobBox }] },
      ],
    });
    expect((await restClient(app, apiKey).put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
    for (const recipient of ['ayse', 'bob']) {
      expect((await signAndComplete(app, await tokenFor(app, built.envelopeId, built.recipients[recipient]!))).errors).toBeUndefined();
    }
    expect(await sealWorkerFor(app, teamId).drain()).toBe(1);
    const response = await fetch(`${app.url}/api/v1/key/envelopes/${built.envelopeId}/documents/${built.documentId}/pdf`, { headers: { 'x-service-api-key': apiKey } });
    const file = path.join(directory, `${built.envelopeId}.pdf`);
    fs.writeFileSync(file, Buffer.from(await response.arrayBuffer()));
    const completed = await app.orm.em
      .fork()
      .execute<{ identifier: string; completed_at: Date }[]>(`select identifier, completed_at from recipient where envelope_id = ?`, [built.envelopeId]);
    const utc = (identifier: string) => `${new Date(completed.find((row) => row.identifier === identifier)!.completed_at).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
    return { built, file, utc };
  }

  it('is on by default: every sealed page names the envelope, each signer’s caption lies in their own field; the seal still validates', async () => {
    const team = await seedTeam(app);
    const { built, file, utc } = await sealedEnvelope(team.apiKey, team.teamId);
    const pages = wordBoxes(file);
    const sizes = pageSizes(file);
    expect(pages).toHaveLength(2);
    pages.forEach((words, index) => {
      const id = words.find((word) => word.text === built.envelopeId);
      expect(id, `page ${index}`).toBeDefined();
      expect(id!.yMax).toBeLessThanOrEqual(sizes[index]!.height);
      expect(id!.xMax).toBeLessThanOrEqual(sizes[index]!.width);
    });
    expectCaptionIn(pages[0]!, `Ayşe Yılmaz ${utc('ayse')}`, ayseBox, [ayseBox, bobBox]);
    expectCaptionIn(pages[0]!, `Bob Stone ${utc('bob')}`, bobBox, [ayseBox, bobBox]);
    expect(pdfsig(file)).toContain('Signature is Valid.');
    const read = await restClient(app, team.apiKey).get(`/envelopes/${built.envelopeId}`);
    expect(read.body.payload.envelope.stamp).toBeNull();
  });

  it('an envelope with stamp false, or a team whose default is off, seals without stamps; an envelope may turn them on again; both faces set it', async () => {
    const team = await seedTeam(app);
    const off = await sealedEnvelope(team.apiKey, team.teamId, { stamp: false });
    const words = wordBoxes(off.file)
      .flat()
      .map((word) => word.text);
    expect(words).not.toContain(off.built.envelopeId);
    expect(words).not.toContain('Stone');

    // The team's default off (REST), seen on both faces.
    const rest = restClient(app, team.apiKey);
    const patched = await rest.patch('/team/settings', { artefacts: { stamp: false } });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    const gql = graphqlClient(app, team.apiKey);
    expect((await gql('{ teamSettings { artefacts { stamp } } }')).data.teamSettings.artefacts.stamp).toBe(false);
    const byDefault = await sealedEnvelope(team.apiKey, team.teamId);
    expect(
      wordBoxes(byDefault.file)
        .flat()
        .map((word) => word.text),
    ).not.toContain(byDefault.built.envelopeId);
    const turnedOn = await sealedEnvelope(team.apiKey, team.teamId, { stamp: true });
    expectCaptionIn(wordBoxes(turnedOn.file)[0]!, `Bob Stone ${turnedOn.utc('bob')}`, bobBox, [ayseBox, bobBox]);

    // GraphQL: create with stamp, update it; REST PATCH too.
    const created = await gql('mutation { createEnvelope(input: { name: "Stamped", stamp: true }) { id stamp } }');
    expect(created.errors).toBeUndefined();
    expect(created.data.createEnvelope.stamp).toBe(true);
    const id = created.data.createEnvelope.id as string;
    const updated = await gql(`mutation { updateEnvelope(id: "${id}", input: { stamp: false }) { stamp } }`);
    expect(updated.data.updateEnvelope.stamp).toBe(false);
    expect((await rest.patch(`/envelopes/${id}`, { stamp: true })).status).toBe(200);
    expect((await gql(`{ envelope(id: "${id}") { stamp } }`)).data.envelope.stamp).toBe(true);
    // null on GraphQL is the team's default again, as on REST; a name-only update leaves it alone.
    const reset = await gql(`mutation { updateEnvelope(id: "${id}", input: { stamp: null }) { stamp } }`);
    expect(reset.errors).toBeUndefined();
    expect(reset.data.updateEnvelope.stamp).toBeNull();
    expect((await gql(`mutation { updateEnvelope(id: "${id}", input: { stamp: true }) { stamp } }`)).data.updateEnvelope.stamp).toBe(true);
    expect((await gql(`mutation { updateEnvelope(id: "${id}", input: { name: "Renamed" }) { stamp } }`)).data.updateEnvelope.stamp).toBe(true);
    const refused = await rest.patch(`/envelopes/${id}`, { stamp: 'yes' });
    expect(refused.status).toBe(400);
    expect(refused.body.error.name).toBe('Request.Invalid');
    // Back to the service's default (on).
    expect((await gql('mutation { updateTeamSettings(input: { artefacts: { stamp: null } }) { artefacts { stamp } } }')).data.updateTeamSettings.artefacts.stamp).toBeNull();
  });
});
