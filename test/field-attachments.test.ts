/**
 * The attachment field type (issue 32): its config on both faces and both owners, the signer's
 * upload (GraphQL multipart with the signing token), the value naming uploaded files, and every
 * hostile upload refused by name with nothing stored: a PDF named `.png`, a PNG claiming
 * 100,000 × 100,000 pixels, a file over maxBytes, one file too many, a wrong token, another
 * recipient's field, another envelope's file.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeOrphanBlobs } from '../src/domain/document/orphan-blobs.ts';
import { httpStatusForError } from '../src/shared/errors.ts';
import { makePdf } from './fixtures/pdfs.ts';
import { createDraftWithDocumentAndSigner, uploadDocument } from './helpers/envelopes.ts';
import { firstErrorName, graphqlClient, restClient, type SeededTeam, seedTeam, startTestApp, type TestApp, testSealDataDir } from './helpers/harness.ts';
import { png, pngClaiming } from './helpers/images.ts';
import { buildEnvelope, type FieldSpec, SUBMIT_MUTATION, signingClient, tokenFor } from './helpers/signing.ts';
import { createReadyTemplate } from './helpers/templates.ts';

let app: TestApp;
let team: SeededTeam;
let directory: string;
beforeAll(async () => {
  app = await startTestApp();
  team = await seedTeam(app);
  directory = fs.mkdtempSync(path.join(os.tmpdir(), 'field-attachments-'));
});
afterAll(async () => {
  fs.rmSync(directory, { recursive: true, force: true });
  await app.close();
});

const MiB = 1024 * 1024;
const UPLOAD = 'mutation($fieldId: ID!, $file: Upload!) { uploadSigningAttachment(fieldId: $fieldId, file: $file) { id fieldId name contentType size sha256 createdAt } }';
const REMOVE = 'mutation($fileId: ID!) { removeSigningAttachment(fileId: $fileId) { id } }';

type Answer = { status: number; body: any };

/** A GraphQL multipart request (the spec graphql-upload-minimal reads) with the signing token. */
async function upload(token: string | undefined, fieldId: string, bytes: Uint8Array, filename: string): Promise<Answer> {
  const form = new FormData();
  form.append('operations', JSON.stringify({ query: UPLOAD, variables: { fieldId, file: null } }));
  form.append('map', JSON.stringify({ 0: ['variables.file'] }));
  form.append('0', new Blob([bytes as Uint8Array<ArrayBuffer>], { type: 'image/png' }), filename);
  const response = await fetch(`${app.url}/graphql`, {
    method: 'POST',
    headers: { accept: 'application/graphql-response+json', ...(token === undefined ? {} : { 'x-signing-token': token }) },
    body: form,
  });
  return { status: response.status, body: await response.json() };
}

/**
 * A refusal by name, with the HTTP status its name answers (GraphQL itself answers 200 for every
 * error but authentication's, as graphql-over-http expects; REST answers the status).
 */
function expectRefused(answer: Answer, name: string, status: number): void {
  expect(errorName(answer), JSON.stringify(answer.body)).toBe(name);
  expect(httpStatusForError(name)).toBe(status);
  expect(answer.status).toBe(status === 401 ? 401 : 200);
}

function errorName(answer: Answer): string | undefined {
  return answer.body.errors?.[0]?.extensions?.code ?? answer.body.error?.name;
}

/** A real JPEG: a one-page PDF rendered by pdftoppm. */
async function jpeg(): Promise<Buffer> {
  const pdf = path.join(directory, `page-${Math.random().toString(36).slice(2)}.pdf`);
  fs.writeFileSync(pdf, await makePdf({ pages: 1 }));
  execFileSync('pdftoppm', ['-jpeg', '-r', '20', '-singlefile', pdf, pdf.replace(/\.pdf$/, '')]);
  return fs.readFileSync(pdf.replace(/\.pdf$/, '.jpg'));
}

async function attachmentRows(envelopeId: string): Promise<{ id: string; sha256: string; name: string; content_type: string; byte_size: number }[]> {
  return app.orm.em.fork().execute(`select id, sha256, name, content_type, byte_size from field_attachment where envelope_id = ? order by created_at, id`, [envelopeId]);
}

async function stored(sha256: string): Promise<boolean> {
  return (await app.dependencies.blobStore.stat(sha256)) !== undefined;
}

function stagingFiles(): string[] {
  const staging = path.join(app.dataDir, 'blobs', 'tmp');
  return fs.existsSync(staging) ? fs.readdirSync(staging) : [];
}

function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** A sent envelope: the buyer holds a signature and the attachment fields given; the seller its own attachment field. */
async function sentEnvelope(attachments: FieldSpec[]) {
  const built = await buildEnvelope(app, team.apiKey, {
    recipients: [
      { identifier: 'buyer', order: 1, fields: [{ identifier: 'signature', required: true, view: { x: 300, y: 700, width: 200, height: 40 } }, ...attachments] },
      { identifier: 'seller', order: 1, fields: [{ identifier: 'seller-files', type: 'attachment', required: false }] },
    ],
  });
  expect((await restClient(app, team.apiKey).put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
  const buyerToken = await tokenFor(app, built.envelopeId, built.recipients.buyer);
  const sellerToken = await tokenFor(app, built.envelopeId, built.recipients.seller);
  return { ...built, buyerToken, sellerToken };
}

describe('the attachment config, on both faces and both owners', () => {
  it('fills its defaults on read, refuses unknown keys and out-of-range bounds, and refuses a value from the sender by name', async () => {
    const draft = await createDraftWithDocumentAndSigner(app, team.apiKey);
    const rest = restClient(app, team.apiKey);
    const graphql = graphqlClient(app, team.apiKey);
    const view = { documentId: draft.documentId, page: 0, location: { x: 50, y: 50 }, size: { width: 120, height: 30 } };
    const created = await rest.post(`/envelopes/${draft.envelopeId}/fields`, { fields: [{ type: 'attachment', recipientId: draft.signerId, identifier: 'payslip', views: [view] }] });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body.payload.fields[0].config).toEqual({ accept: ['application/pdf', 'image/png', 'image/jpeg'], maxFiles: 1, maxBytes: 10 * MiB });

    const viaGraphql = await graphql('mutation($e: ID!, $fields: [FieldInput!]!) { createFields(envelopeId: $e, fields: $fields) { type config } }', {
      e: draft.envelopeId,
      fields: [{ type: 'attachment', recipientId: draft.signerId, identifier: 'scans', config: { accept: ['image/png'], maxFiles: 10, maxBytes: 25 * MiB }, views: [view] }],
    });
    expect(viaGraphql.errors).toBeUndefined();
    expect(viaGraphql.data.createFields[0]).toEqual({ type: 'attachment', config: { accept: ['image/png'], maxFiles: 10, maxBytes: 25 * MiB } });

    const refused = await rest.post(`/envelopes/${draft.envelopeId}/fields`, {
      fields: [{ type: 'attachment', recipientId: draft.signerId, identifier: 'bad', config: { accept: ['image/gif'], maxFiles: 11, maxBytes: 25 * MiB + 1, colour: 'red' }, views: [view] }],
    });
    expect(refused.status).toBe(400);
    const paths = refused.body.error.context.issues.map((issue: { path: string }) => issue.path);
    expect(paths).toEqual(expect.arrayContaining(['fields[0].config.accept[0]', 'fields[0].config.maxFiles', 'fields[0].config.maxBytes', 'fields[0].config.colour']));

    const prefilled = await rest.post(`/envelopes/${draft.envelopeId}/fields`, {
      fields: [{ type: 'attachment', recipientId: draft.signerId, identifier: 'pre', value: { files: [{ id: draft.documentId }] }, views: [view] }],
    });
    expect(prefilled.status).toBe(422);
    expect(prefilled.body.error.name).toBe('Attachment.NotPrefillable');
    const prefilledGraphql = await graphql('mutation($e: ID!, $fields: [FieldInput!]!) { createFields(envelopeId: $e, fields: $fields) { id } }', {
      e: draft.envelopeId,
      fields: [{ type: 'attachment', recipientId: draft.signerId, identifier: 'pre', value: { files: [] }, views: [view] }],
    });
    expect(firstErrorName(prefilledGraphql)).toBe('Attachment.NotPrefillable');
    const fields = await rest.get(`/envelopes/${draft.envelopeId}/fields`);
    const identifiers = fields.body.payload.fields.map((field: { identifier: string }) => field.identifier);
    expect(identifiers).toEqual(expect.arrayContaining(['payslip', 'scans']));
    expect(identifiers).not.toContain('pre');
    expect(identifiers).not.toContain('bad');
  });

  it('works the same on a template: defaults on read, prefill refused by name', async () => {
    const template = await createReadyTemplate(app, team.apiKey);
    const rest = restClient(app, team.apiKey);
    const view = { documentId: template.documentId, page: 0, location: { x: 50, y: 50 }, size: { width: 120, height: 30 } };
    const created = await rest.post(`/templates/${template.templateId}/fields`, {
      fields: [{ type: 'attachment', recipientId: template.signerId, identifier: 'payslip', config: { maxFiles: 3 }, views: [view] }],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body.payload.fields[0].config).toEqual({ accept: ['application/pdf', 'image/png', 'image/jpeg'], maxFiles: 3, maxBytes: 10 * MiB });
    const prefilled = await graphqlClient(app, team.apiKey)('mutation($t: ID!, $fields: [FieldInput!]!) { createTemplateFields(templateId: $t, fields: $fields) { id } }', {
      t: template.templateId,
      fields: [{ type: 'attachment', recipientId: template.signerId, identifier: 'pre', value: { files: [] }, views: [view] }],
    });
    expect(firstErrorName(prefilled)).toBe('Attachment.NotPrefillable');
    // A bulk send's CSV cannot prefill it: the row is refused at the field's path, saying why.
    const form = new FormData();
    form.append('csv', new Blob([Buffer.from('buyer.name,buyer.email,field.payslip\nAda,ada@example.com,payslip.pdf\n', 'utf8')], { type: 'text/csv' }), 'rows.csv');
    const bulk = await fetch(`${app.url}/api/v1/key/templates/${template.templateId}/bulk-sends`, { method: 'POST', headers: { 'x-service-api-key': team.apiKey }, body: form });
    const bulkBody = (await bulk.json()) as any;
    expect(bulk.status, JSON.stringify(bulkBody)).toBe(400);
    expect(bulkBody.error.context.rows[0].issues).toEqual([{ path: 'values.payslip', message: expect.stringContaining('Attachment.NotPrefillable') }]);
    // A jumpstart copies the field with its config.
    const made = await rest.post(`/envelopes/jumpstart/${template.templateId}`, {
      recipients: [{ identifier: 'buyer', agents: [{ info: { name: 'Ada Buyer', email: 'ada@example.com' } }] }],
    });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    const copied = (await rest.get(`/envelopes/${made.body.payload.envelopeId}/fields`)).body.payload.fields;
    expect(copied.find((field: { identifier: string }) => field.identifier === 'payslip')).toMatchObject({ type: 'attachment', value: null, config: { maxFiles: 3, maxBytes: 10 * MiB } });
  });

  it('is placed from a text tag, long and short forms, with its file count; a bad count is listed, not placed', async () => {
    const pdf = await PDFDocument.create();
    const page = pdf.addPage([595, 842]);
    const font = await pdf.embedFont(StandardFonts.Helvetica);
    ['{{attachment;role=buyer;id=payslip}}', '{{file;role=buyer;files=3;id=scans}}', '{{file;role=buyer;files=11}}', '{{text;role=buyer;files=2}}'].forEach((line, index) =>
      page.drawText(line, { x: 40, y: 800 - index * 30, size: 10, font }),
    );
    const bytes = await pdf.save();
    const rest = restClient(app, team.apiKey);
    const envelopeId = (await rest.post('/envelopes', { name: 'Tagged loan' })).body.payload.envelopeId;
    const uploaded = await uploadDocument(app, team.apiKey, envelopeId, { bytes });
    await rest.post(`/envelopes/${envelopeId}/recipients`, {
      recipient: { type: 'signer', identifier: 'buyer', roleName: 'Buyer', order: 1, agents: [{ info: { name: 'Ada', email: 'ada@example.com' } }] },
    });
    const placed = await rest.post(`/envelopes/${envelopeId}/documents/${uploaded.body.payload.document.id}/place-fields`, { from: 'tags' });
    expect(placed.status, JSON.stringify(placed.body)).toBe(200);
    expect(placed.body.payload.fields.map((field: any) => [field.identifier, field.type, field.config.maxFiles])).toEqual([
      ['payslip', 'attachment', 1],
      ['scans', 'attachment', 3],
    ]);
    expect(placed.body.payload.unmatched.map((entry: { reason: string }) => entry.reason)).toEqual([
      '"files" must be a whole number from 1 to 10',
      '"files" applies to attachment tags only',
    ]);
  });
});

describe('uploading attachments with the signing token', () => {
  it('judges a file by its bytes: a PDF named .png is a PDF, refused where only images are accepted', async () => {
    const sent = await sentEnvelope([
      { identifier: 'images-only', type: 'attachment', required: false, config: { accept: ['image/png', 'image/jpeg'] } },
      { identifier: 'anything', type: 'attachment', required: false, config: { maxFiles: 3 } },
    ]);
    const pdf = await makePdf({ pages: 1 });
    const refused = await upload(sent.buyerToken, sent.fields['images-only'], pdf, 'photo.png');
    expectRefused(refused, 'Attachment.TypeNotAccepted', 415);
    expect(refused.body.errors[0].extensions.context).toMatchObject({ contentType: 'application/pdf', accept: ['image/png', 'image/jpeg'] });
    expect(await attachmentRows(sent.envelopeId)).toEqual([]);
    expect(await stored(sha256(pdf))).toBe(false);

    const accepted = await upload(sent.buyerToken, sent.fields.anything, pdf, 'photo.png');
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
    expect(accepted.body.data.uploadSigningAttachment).toMatchObject({
      fieldId: sent.fields.anything,
      name: 'photo.png',
      contentType: 'application/pdf',
      size: pdf.length,
      sha256: sha256(pdf),
    });
    const image = await jpeg();
    const jpegAnswer = await upload(sent.buyerToken, sent.fields.anything, image, 'scan.pdf');
    expect(jpegAnswer.body.data.uploadSigningAttachment).toMatchObject({ contentType: 'image/jpeg', size: image.length });
    const text = await upload(sent.buyerToken, sent.fields.anything, Buffer.from('just some text, named like a picture'), 'note.png');
    expectRefused(text, 'Attachment.UnsupportedType', 415);
    expect((await attachmentRows(sent.envelopeId)).map((row) => row.content_type)).toEqual(['application/pdf', 'image/jpeg']);
    expect(await stored(sha256(pdf))).toBe(true);
  });

  it('refuses a PNG claiming 100,000 × 100,000 pixels from its header, a damaged image and a damaged PDF, storing nothing', async () => {
    const sent = await sentEnvelope([{ identifier: 'scans', type: 'attachment', required: false, config: { maxFiles: 5 } }]);
    const bomb = pngClaiming(100_000, 100_000);
    const refused = await upload(sent.buyerToken, sent.fields.scans, bomb, 'bomb.png');
    expectRefused(refused, 'Attachment.ImageTooLarge', 422);
    expect(refused.body.errors[0].extensions.context).toMatchObject({ width: 100_000, height: 100_000 });
    const cut = png(40, 40).subarray(0, 60);
    const damaged = await upload(sent.buyerToken, sent.fields.scans, cut, 'cut.png');
    expectRefused(damaged, 'Attachment.InvalidImage', 422);
    const truncatedPdf = (await makePdf({ pages: 3 })).subarray(0, 400);
    const badPdf = await upload(sent.buyerToken, sent.fields.scans, truncatedPdf, 'cut.pdf');
    expectRefused(badPdf, 'Attachment.InvalidPdf', 422);
    expect(await attachmentRows(sent.envelopeId)).toEqual([]);
    for (const bytes of [bomb, cut, truncatedPdf]) expect(await stored(sha256(bytes))).toBe(false);
    expect(stagingFiles()).toEqual([]);
  });

  it('refuses a file over maxBytes while it streams: no row, no object, no staging file', async () => {
    const sent = await sentEnvelope([{ identifier: 'small', type: 'attachment', required: false, config: { maxBytes: 64 * 1024 } }]);
    const big = png(400, 400);
    const padded = Buffer.concat([png(20, 20), Buffer.alloc(200 * 1024, 7)]);
    for (const bytes of [padded, big.length > 64 * 1024 ? big : padded]) {
      const refused = await upload(sent.buyerToken, sent.fields.small, bytes, 'big.png');
      expectRefused(refused, 'Attachment.TooLarge', 413);
      expect(refused.body.errors[0].extensions.context.limitBytes).toBe(64 * 1024);
      expect(await stored(sha256(bytes))).toBe(false);
    }
    expect(await attachmentRows(sent.envelopeId)).toEqual([]);
    expect(stagingFiles()).toEqual([]);
    // Exactly at the limit is accepted.
    const small = png(20, 20);
    expect((await upload(sent.buyerToken, sent.fields.small, small, 'ok.png')).body.data.uploadSigningAttachment.size).toBe(small.length);
  });

  it('takes at most maxFiles uploads per field: the eleventh of ten is refused; a removed one frees its place', async () => {
    const sent = await sentEnvelope([{ identifier: 'ten', type: 'attachment', required: false, config: { maxFiles: 10 } }]);
    const ids: string[] = [];
    for (let index = 0; index < 10; index += 1) {
      const answer = await upload(sent.buyerToken, sent.fields.ten, png(10 + index, 10), `page-${index}.png`);
      expect(answer.body.errors, JSON.stringify(answer.body)).toBeUndefined();
      ids.push(answer.body.data.uploadSigningAttachment.id);
    }
    const eleventh = await upload(sent.buyerToken, sent.fields.ten, png(30, 30), 'page-10.png');
    expectRefused(eleventh, 'Attachment.TooManyFiles', 422);
    expect(eleventh.body.errors[0].extensions.context).toMatchObject({ maxFiles: 10 });
    expect(await attachmentRows(sent.envelopeId)).toHaveLength(10);
    expect(await stored(sha256(png(30, 30)))).toBe(false);
    // Eleven files named in one value are refused too (the value names at most maxFiles).
    const eleven = await signingClient(app, sent.buyerToken)(SUBMIT_MUTATION, { values: [{ fieldId: sent.fields.ten, value: { files: [...ids, ids[0]].map((id) => ({ id })) } }] });
    expect(firstErrorName(eleven)).toBe('Request.Invalid');
    expect(eleven.errors![0].extensions.context.issues[0].path).toBe('values[0].value.files');
    const removed = await signingClient(app, sent.buyerToken)(REMOVE, { fileId: ids[3] });
    expect(removed.errors).toBeUndefined();
    expect((await upload(sent.buyerToken, sent.fields.ten, png(30, 30), 'page-10.png')).body.data.uploadSigningAttachment.name).toBe('page-10.png');
    expect(await attachmentRows(sent.envelopeId)).toHaveLength(10);
  });

  it('gives the last place under maxFiles to exactly one of two uploads racing for it', async () => {
    const sent = await sentEnvelope([{ identifier: 'one', type: 'attachment', required: false, config: { maxFiles: 1 } }]);
    const answers = await Promise.all([upload(sent.buyerToken, sent.fields.one, png(21, 21), 'a.png'), upload(sent.buyerToken, sent.fields.one, png(22, 22), 'b.png')]);
    const names = answers.map((answer) => (answer.body.data?.uploadSigningAttachment ? 'stored' : errorName(answer))).sort();
    expect(names).toEqual(['Attachment.TooManyFiles', 'stored']);
    expect(await attachmentRows(sent.envelopeId)).toHaveLength(1);
  });

  it('refuses a wrong token, another recipient’s field, another field’s or envelope’s file and a field of another type, by name, changing nothing', async () => {
    const sent = await sentEnvelope([
      { identifier: 'payslip', type: 'attachment', required: true },
      { identifier: 'other', type: 'attachment', required: false },
    ]);
    const elsewhere = await sentEnvelope([{ identifier: 'payslip', type: 'attachment', required: false }]);
    const image = png(32, 32);

    const noToken = await upload(undefined, sent.fields.payslip, image, 'a.png');
    expect(noToken.status).toBe(401);
    const wrongToken = await upload('sgn_not-a-token', sent.fields.payslip, image, 'a.png');
    expectRefused(wrongToken, 'Signing.InvalidToken', 401);
    const othersField = await upload(sent.buyerToken, sent.fields['seller-files'], image, 'a.png');
    expectRefused(othersField, 'Signing.FieldNotAssigned', 403);
    const notAttachment = await upload(sent.buyerToken, sent.fields.signature, image, 'a.png');
    expectRefused(notAttachment, 'Attachment.NotAttachmentField', 422);
    expect(await attachmentRows(sent.envelopeId)).toEqual([]);

    const mine = (await upload(sent.buyerToken, sent.fields.payslip, image, 'payslip.png')).body.data.uploadSigningAttachment;
    const sellers = (await upload(sent.sellerToken, sent.fields['seller-files'], png(33, 33), 'seller.png')).body.data.uploadSigningAttachment;
    const foreign = (await upload(elsewhere.buyerToken, elsewhere.fields.payslip, png(34, 34), 'foreign.png')).body.data.uploadSigningAttachment;
    const client = signingClient(app, sent.buyerToken);
    for (const fileId of [sellers.id, foreign.id]) {
      const refused = await client(SUBMIT_MUTATION, { values: [{ fieldId: sent.fields.payslip, value: { files: [{ id: fileId }] } }] });
      expectRefused({ status: refused.status, body: { errors: refused.errors } }, 'Attachment.UnknownFile', 422);
      expect(refused.errors![0].extensions.context.fileIds).toEqual([fileId]);
    }
    // My own file, but uploaded for another field.
    const wrongField = await client(SUBMIT_MUTATION, { values: [{ fieldId: sent.fields.other, value: { files: [{ id: mine.id }] } }] });
    expect(firstErrorName(wrongField)).toBe('Attachment.UnknownFile');
    const fieldsAfter = await app.orm.em.fork().execute<{ value: unknown }[]>(`select value from field where envelope_id = ? and type = 'attachment'`, [sent.envelopeId]);
    expect(fieldsAfter.map((row) => row.value)).toEqual([null, null, null]);

    // The value names the file; what the signer sends besides its id is replaced by the file's own record.
    const kept = await client(`mutation($values: [SigningValueInput!]) { submitSigning(values: $values) { fields { id value } } }`, {
      values: [{ fieldId: sent.fields.payslip, value: { files: [{ id: mine.id, name: 'forged.pdf', sha256: '0'.repeat(64) }] } }],
    });
    expect(kept.errors).toBeUndefined();
    const value = kept.data.submitSigning.fields.find((field: { id: string }) => field.id === sent.fields.payslip).value;
    expect(value).toEqual({ files: [{ id: mine.id, name: 'payslip.png', contentType: 'image/png', size: image.length, sha256: sha256(image) }] });
  });
});

describe('the sender reads the files signers kept, on both faces', () => {
  it('lists and streams them byte-identical, hides uploads not kept, and answers another team as it answers nobody', async () => {
    const sent = await sentEnvelope([{ identifier: 'payslip', type: 'attachment', required: true, config: { maxFiles: 3 } }]);
    const pdf = await makePdf({ pages: 2 });
    const image = await jpeg();
    const client = signingClient(app, sent.buyerToken);
    const kept = (await upload(sent.buyerToken, sent.fields.payslip, pdf, 'payslip-march.pdf')).body.data.uploadSigningAttachment;
    const photo = (await upload(sent.buyerToken, sent.fields.payslip, image, 'ID card.jpg')).body.data.uploadSigningAttachment;
    const dropped = (await upload(sent.buyerToken, sent.fields.payslip, png(16, 16), 'wrong.png')).body.data.uploadSigningAttachment;
    const rest = restClient(app, team.apiKey);
    // Uploaded, named by no value yet: nothing for the sender.
    expect((await rest.get(`/envelopes/${sent.envelopeId}/attachments`)).body.payload.attachments).toEqual([]);

    const completed = await client(SUBMIT_MUTATION, {
      complete: true,
      values: [
        { fieldId: sent.fields.signature, value: { kind: 'typed', text: 'Ada Lovelace', font: 'cursive' } },
        { fieldId: sent.fields.payslip, value: { files: [{ id: kept.id }, { id: photo.id }] } },
      ],
    });
    expect(completed.errors, JSON.stringify(completed.errors)).toBeUndefined();
    // The upload not kept is gone at completion; its row with it.
    expect((await attachmentRows(sent.envelopeId)).map((row) => row.id)).toEqual([kept.id, photo.id]);
    // Its object is named by no row now: the orphan sweep removes it, and keeps the kept files'.
    expect(await stored(sha256(png(16, 16)))).toBe(true);
    await removeOrphanBlobs({ em: app.orm.em, blobStore: app.dependencies.blobStore, now: app.dependencies.clock.now(), graceMs: 0 });
    expect(await stored(sha256(png(16, 16)))).toBe(false);
    expect(await stored(sha256(pdf))).toBe(true);
    expect(await stored(sha256(image))).toBe(true);

    const listed = await rest.get(`/envelopes/${sent.envelopeId}/attachments`);
    expect(listed.status).toBe(200);
    expect(listed.body.payload.attachments).toEqual([
      {
        id: kept.id,
        fieldId: sent.fields.payslip,
        fieldIdentifier: 'payslip',
        recipientId: sent.recipients.buyer,
        name: 'payslip-march.pdf',
        contentType: 'application/pdf',
        size: pdf.length,
        sha256: sha256(pdf),
        createdAt: expect.any(String),
      },
      {
        id: photo.id,
        fieldId: sent.fields.payslip,
        fieldIdentifier: 'payslip',
        recipientId: sent.recipients.buyer,
        name: 'ID card.jpg',
        contentType: 'image/jpeg',
        size: image.length,
        sha256: sha256(image),
        createdAt: expect.any(String),
      },
    ]);
    const graphql = graphqlClient(app, team.apiKey);
    const viaGraphql = await graphql('query($id: ID!) { envelope(id: $id) { id attachments { id fieldIdentifier recipientId name contentType size sha256 } } }', { id: sent.envelopeId });
    expect(viaGraphql.errors).toBeUndefined();
    expect(viaGraphql.data.envelope.attachments).toEqual(listed.body.payload.attachments.map(({ fieldId: _f, createdAt: _c, ...rest }: Record<string, unknown>) => rest));

    for (const [file, bytes, type] of [
      [kept, pdf, 'application/pdf'],
      [photo, image, 'image/jpeg'],
    ] as const) {
      const download = await fetch(`${app.url}/api/v1/key/envelopes/${sent.envelopeId}/attachments/${file.id}`, { headers: { 'x-service-api-key': team.apiKey } });
      expect(download.status).toBe(200);
      expect(download.headers.get('content-type')).toBe(type);
      expect(download.headers.get('content-disposition')).toContain('attachment');
      expect(download.headers.get('content-disposition')).toContain(encodeURIComponent(file.name).replace(/%20/g, '%20'));
      expect(Buffer.from(await download.arrayBuffer()).equals(Buffer.from(bytes))).toBe(true);
      const link = await graphql('query($e: ID!, $f: ID!) { attachmentDownloadUrl(envelopeId: $e, fileId: $f) { url } }', { e: sent.envelopeId, f: file.id });
      expect(link.errors).toBeUndefined();
      const signed = new URL(link.data.attachmentDownloadUrl.url);
      const viaLink = await fetch(`${app.url}${signed.pathname}`);
      expect(viaLink.headers.get('content-type')).toBe(type);
      expect(Buffer.from(await viaLink.arrayBuffer()).equals(Buffer.from(bytes))).toBe(true);
    }
    const head = await fetch(`${app.url}/api/v1/key/envelopes/${sent.envelopeId}/attachments/${kept.id}`, { method: 'HEAD', headers: { 'x-service-api-key': team.apiKey } });
    expect(head.status).toBe(405);

    // The upload not kept, and a file of nobody: the same not-found.
    for (const fileId of [dropped.id, '00000000-0000-4000-8000-000000000000', 'not-an-id']) {
      const missing = await rest.get(`/envelopes/${sent.envelopeId}/attachments/${fileId}`);
      expect(missing.status).toBe(404);
      expect(missing.body.error.name).toBe('Attachment.NotFound');
    }
    const nolink = await graphql('query($e: ID!, $f: ID!) { attachmentDownloadUrl(envelopeId: $e, fileId: $f) { url } }', { e: sent.envelopeId, f: dropped.id });
    expect(firstErrorName(nolink)).toBe('Attachment.NotFound');

    // Another team: its answers are those for an envelope that does not exist.
    const intruder = await seedTeam(app);
    const theirs = restClient(app, intruder.apiKey);
    const unknownEnvelope = '00000000-0000-4000-8000-000000000001';
    for (const suffix of ['', `/${kept.id}`]) {
      const foreign = await theirs.get(`/envelopes/${sent.envelopeId}/attachments${suffix}`);
      const none = await theirs.get(`/envelopes/${unknownEnvelope}/attachments${suffix}`);
      expect(foreign.status).toBe(404);
      expect(foreign.body.error.name).toBe('Envelope.NotFound');
      expect(none.body.error.name).toBe('Envelope.NotFound');
      expect(foreign.body.error.description.replace(sent.envelopeId, 'ID')).toBe(none.body.error.description.replace(unknownEnvelope, 'ID'));
    }
    const foreignGraphql = await graphqlClient(app, intruder.apiKey)('query($id: ID!) { envelope(id: $id) { attachments { id } } }', { id: sent.envelopeId });
    expect(firstErrorName(foreignGraphql)).toBe('Envelope.NotFound');
    const foreignLink = await graphqlClient(app, intruder.apiKey)('query($e: ID!, $f: ID!) { attachmentDownloadUrl(envelopeId: $e, fileId: $f) { url } }', {
      e: sent.envelopeId,
      f: kept.id,
    });
    expect(firstErrorName(foreignLink)).toBe('Envelope.NotFound');
  });
});

describe('attachments in the artefacts', () => {
  it('appends them as pages after their document before the seal, and lists them in the ZIP, the evidence package and the certificate', async () => {
    const sent = await sentEnvelope([{ identifier: 'payslip', type: 'attachment', required: true, config: { maxFiles: 3 }, view: { x: 40, y: 40, width: 300, height: 30 } }]);
    const pdf = await makePdf({ pages: 2 });
    const photo = await jpeg();
    const scan = png(300, 120);
    const client = signingClient(app, sent.buyerToken);
    const files = [];
    for (const [bytes, name] of [
      [pdf, 'payslip-march.pdf'],
      [photo, 'ID card.jpg'],
      [scan, 'scan.png'],
    ] as const) {
      files.push((await upload(sent.buyerToken, sent.fields.payslip, bytes, name)).body.data.uploadSigningAttachment);
    }
    const completed = await client(SUBMIT_MUTATION, {
      complete: true,
      values: [
        { fieldId: sent.fields.signature, value: { kind: 'typed', text: 'Ada Lovelace', font: 'cursive' } },
        { fieldId: sent.fields.payslip, value: { files: files.map(({ id }) => ({ id })) } },
      ],
    });
    expect(completed.errors, JSON.stringify(completed.errors)).toBeUndefined();
    const seller = await signingClient(app, sent.sellerToken)(SUBMIT_MUTATION, { complete: true });
    expect(seller.errors, JSON.stringify(seller.errors)).toBeUndefined();
    const headers = { 'x-service-api-key': team.apiKey };

    // The sealed PDF: the document's 2 pages, then the PDF's 2, then one A4 page per image; the seal covers them.
    const sealedResponse = await fetch(`${app.url}/api/v1/key/envelopes/${sent.envelopeId}/documents/${sent.documentId}/pdf`, { headers });
    expect(sealedResponse.status).toBe(200);
    expect(sealedResponse.headers.get('x-artefact-sealed')).toBe('true');
    const sealed = path.join(directory, 'sealed.pdf');
    fs.writeFileSync(sealed, Buffer.from(await sealedResponse.arrayBuffer()));
    const info = execFileSync('pdfinfo', [sealed], { encoding: 'utf8' });
    expect(info).toMatch(/Pages:\s+6\n/);
    const sizes = execFileSync('pdfinfo', ['-f', '5', '-l', '6', sealed], { encoding: 'utf8' });
    expect(sizes, sizes).toMatch(/Page\s+5 size:\s+595\.\d+ x 841\.\d+/);
    expect(sizes, sizes).toMatch(/Page\s+6 size:\s+595\.\d+ x 841\.\d+/);
    const pageText = (page: number) => execFileSync('pdftotext', ['-f', String(page), '-l', String(page), '-raw', sealed, '-'], { encoding: 'utf8' }).replace(/\s+/g, ' ');
    expect(pageText(1)).toContain('payslip-march.pdf, ID card.jpg, scan.png');
    expect(pageText(5)).toContain(`Attachment: ID card.jpg (SHA-256 ${sha256(photo)})`);
    expect(pageText(6)).toContain(`Attachment: scan.png (SHA-256 ${sha256(scan)})`);
    const report = execFileSync('pdfsig', [sealed], { encoding: 'utf8' });
    expect(report).toContain('Signature Validation: Signature is Valid.');
    expect(report).toContain('Total document signed');

    // The ZIP: the documents, then attachments/ with each file as uploaded.
    const zipResponse = await fetch(`${app.url}/api/v1/key/envelopes/${sent.envelopeId}/pdf`, { headers });
    expect(zipResponse.status).toBe(200);
    const zip = path.join(directory, 'envelope.zip');
    fs.writeFileSync(zip, Buffer.from(await zipResponse.arrayBuffer()));
    const listing = execFileSync('unzip', ['-Z1', zip], { encoding: 'utf8' }).trim().split('\n');
    expect(listing.filter((name) => name.startsWith('attachments/'))).toEqual(['attachments/payslip-march.pdf', 'attachments/ID card.jpg', 'attachments/scan.png']);
    for (const [name, bytes] of [
      ['attachments/payslip-march.pdf', pdf],
      ['attachments/ID card.jpg', photo],
      ['attachments/scan.png', scan],
    ] as const) {
      expect(execFileSync('unzip', ['-p', zip, name]).equals(Buffer.from(bytes)), name).toBe(true);
    }

    // The evidence package: each attachment a part with its hash; verify-package still passes.
    const evidenceResponse = await fetch(`${app.url}/api/v1/key/envelopes/${sent.envelopeId}/evidence`, { headers });
    expect(evidenceResponse.status).toBe(200);
    const evidence = path.join(directory, 'evidence.zip');
    fs.writeFileSync(evidence, Buffer.from(await evidenceResponse.arrayBuffer()));
    const manifest = JSON.parse(execFileSync('unzip', ['-p', evidence, 'manifest.json'], { encoding: 'utf8' }));
    expect(manifest.parts.filter((part: { kind: string }) => part.kind === 'attachment')).toEqual([
      { path: 'attachments/payslip-march.pdf', kind: 'attachment', sha256: sha256(pdf), byteSize: pdf.length, attachmentId: files[0].id, name: 'payslip-march.pdf' },
      { path: 'attachments/ID card.jpg', kind: 'attachment', sha256: sha256(photo), byteSize: photo.length, attachmentId: files[1].id, name: 'ID card.jpg' },
      { path: 'attachments/scan.png', kind: 'attachment', sha256: sha256(scan), byteSize: scan.length, attachmentId: files[2].id, name: 'scan.png' },
    ]);
    expect(execFileSync('unzip', ['-p', evidence, 'attachments/scan.png']).equals(scan)).toBe(true);
    const verified = spawnSync(process.execPath, ['src/cli/main.ts', 'verify-package', evidence], { encoding: 'utf8', env: { ...process.env, DATA_DIR: testSealDataDir() } });
    expect(verified.status, verified.stdout + verified.stderr).toBe(0);

    // The certificate of completion: each attachment by name and hash.
    const certificateResponse = await fetch(`${app.url}/api/v1/key/envelopes/${sent.envelopeId}/audit/pdf?locale=en-US`, { headers });
    expect(certificateResponse.status).toBe(200);
    const certificate = path.join(directory, 'certificate.pdf');
    fs.writeFileSync(certificate, Buffer.from(await certificateResponse.arrayBuffer()));
    const text = execFileSync('pdftotext', ['-raw', certificate, '-'], { encoding: 'utf8' }).replace(/\s+/g, ' ');
    for (const [name, bytes] of [
      ['payslip-march.pdf', pdf],
      ['ID card.jpg', photo],
      ['scan.png', scan],
    ] as const)
      expect(text).toContain(`${name} (SHA-256 ${sha256(bytes)})`);
  });
});
