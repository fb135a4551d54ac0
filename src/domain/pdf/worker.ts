/**
 * The body of a PDF worker thread (see pdf/worker-pool.ts). It runs one task at a time and
 * answers every task with a message; inspection refusals are answers, not errors, because an
 * Error loses its class (and the refusal's reason) when it crosses the thread boundary.
 *
 * Only Node built-ins, the PDF libraries and the modules doing the work are imported: Node loads
 * this file itself in the thread (types stripped), outside any bundler or test transform.
 */
import fs from 'node:fs';
import { parentPort } from 'node:worker_threads';
import { PDFDocument } from 'pdf-lib';
import { appendAttachments } from './appendix.ts';
import { buildAuditPdf } from './audit-pdf-layout.ts';
import { decryptWithoutPassword } from './decrypt.ts';
import { readFormFields, removeFormFields } from './form-fields.ts';
import { appendUpdate, objectsAddedSince, previousSection, reserveExistingNumbers } from './incremental.ts';
import { inspectPdfFile, PdfInspectionError } from './inspect/inspect.ts';
import { drawMergedValues } from './merge-draw.ts';
import { loadForRendering, objectsChangedOnPages, renderFields } from './render.ts';
import { embedExternalSignature, prepareExternalSignature, sealAsUpdate, sealPdf } from './seal.ts';
import { findTextTags, hideTextTags } from './text-tags.ts';
import { verifyPdf } from './verify.ts';
import type { PdfTask, PdfTaskAnswer, PdfWorkerReply, PrepareSignatureTask, RenderTask, SignDigestReply, SignDigestRequest } from './worker-protocol.ts';

/** Signature requests sent to the pool and not answered yet, by request id. */
const pendingSignatures = new Map<number, { resolve(signature: Uint8Array): void; reject(error: Error): void }>();
let nextSignatureRequest = 1;

/** The digest signer of a task whose seal key is not in this thread: the pool signs with the seal's signer (a token) and answers. */
function remoteSigner(taskId: number): (digest: Uint8Array) => Promise<Uint8Array> {
  return (digest) =>
    new Promise((resolve, reject) => {
      const requestId = nextSignatureRequest++;
      pendingSignatures.set(requestId, { resolve, reject });
      const request: SignDigestRequest = { signDigest: { requestId, taskId, digest } };
      port.postMessage(request);
    });
}

/** The file loaded for drawing, and its bytes; an owner-password-only original is read through a decrypted copy (pdf/decrypt.ts). */
async function loadDecrypted(sourcePath: string, besidePath: string): Promise<{ pdf: PDFDocument; bytes: Buffer }> {
  // Read at once: this thread runs one task at a time and has nothing else to do meanwhile, and
  // each step of an asynchronous read is a round trip through libuv's pool, which on a busy machine
  // costs more than the read.
  const bytes = fs.readFileSync(sourcePath);
  const original = await loadForRendering(bytes);
  if (!original.isEncrypted) return { pdf: original, bytes };
  const decryptedPath = `${besidePath}.decrypted`;
  if (!(await decryptWithoutPassword(sourcePath, decryptedPath))) throw new Error('the document is encrypted and qpdf could not decrypt it');
  try {
    const decrypted = await fs.promises.readFile(decryptedPath);
    return { pdf: await loadForRendering(decrypted), bytes: decrypted };
  } finally {
    await fs.promises.rm(decryptedPath, { force: true });
  }
}

/**
 * Draws the values and writes the result, sealed when asked. A file whose last cross-reference
 * section can be found gets what was drawn as an incremental update (pdf/incremental.ts): the
 * original bytes stay as they are, and only the pages drawn on and the objects added are written,
 * so the work grows with the pages that carry fields, not with the document. Any other file is
 * rewritten whole, as pdf-lib saves it.
 */
async function renderTask(task: RenderTask & { id: number }): Promise<Buffer | Uint8Array> {
  const { pdf, bytes } = await loadDecrypted(task.sourcePath, task.outputPath);
  if (task.onlyPage !== undefined) return renderOnePage(pdf, task, task.onlyPage);
  const appendices = task.appendices ?? [];
  // Appended pages change the page tree, which an incremental update of the drawn pages would
  // leave out: a document with attachments is written whole.
  const previous = appendices.length > 0 ? undefined : previousSection(bytes);
  if (previous !== undefined) reserveExistingNumbers(pdf, previous);
  const since = pdf.context.largestObjectNumber;
  const pages = await renderFields(pdf, { fields: task.fields, draft: task.draft, draftLabel: task.draftLabel, stamp: task.stamp });
  await appendAttachments(pdf, appendices);
  if (previous === undefined) {
    return task.seal === undefined ? pdf.save({ updateFieldAppearances: false, objectsPerTick: Infinity }) : sealPdf(pdf, task.seal.material, task.seal.info, remoteSigner(task.id));
  }
  const changed = objectsChangedOnPages(pdf, pages);
  if (task.seal !== undefined) return sealAsUpdate(bytes, pdf, { changed, since }, { ...task.seal, signDigest: remoteSigner(task.id) });
  await pdf.flush();
  return appendUpdate(bytes, pdf, [...changed, ...objectsAddedSince(pdf, since)]);
}

/**
 * One page of the document as a PDF of its own, drawn on like the whole (the signing page's
 * escrowed pages): the page is copied out first, so the work and the file grow with that page
 * (its content and the resources it uses), not with the document.
 */
async function renderOnePage(source: PDFDocument, task: RenderTask, index: number): Promise<Uint8Array> {
  // Escrowed pages carry the mark only (the page draws the values itself): nothing else is asked of one page.
  if (task.seal !== undefined || (task.appendices ?? []).length > 0 || task.fields.length > 0) throw new Error('a single page is drawn with the draft mark only');
  const single = await PDFDocument.create({ updateMetadata: false });
  const [page] = await single.copyPages(source, [index]);
  single.addPage(page);
  await renderFields(single, { fields: [], draft: task.draft, draftLabel: task.draftLabel });
  return single.save({ updateFieldAppearances: false, objectsPerTick: Infinity });
}

/**
 * A signer's values drawn and its placeholder added (issue 35): as an update when the file has a
 * cross-reference section to append to (always, once a signer signed it: the earlier signatures
 * must keep covering their bytes), else rewritten whole, as the seal does.
 */
async function prepareSignatureTask(task: PrepareSignatureTask): Promise<{ prepared: Buffer; contentDigest: Buffer }> {
  const { pdf, bytes } = await loadDecrypted(task.sourcePath, task.outputPath);
  const previous = previousSection(bytes);
  if (previous !== undefined) reserveExistingNumbers(pdf, previous);
  const since = pdf.context.largestObjectNumber;
  const pages = await renderFields(pdf, { fields: task.fields, draft: false });
  if (previous === undefined) return prepareExternalSignature(pdf, task.signature);
  return prepareExternalSignature(pdf, task.signature, { file: bytes, changed: objectsChangedOnPages(pdf, pages), since });
}

async function run(task: PdfTask): Promise<PdfTaskAnswer> {
  try {
    if (task.kind === 'render') {
      const bytes = await renderTask(task);
      fs.writeFileSync(task.outputPath, bytes);
      return { id: task.id, outcome: 'written', byteSize: bytes.length };
    }
    if (task.kind === 'prepare-signature') {
      const { prepared, contentDigest } = await prepareSignatureTask(task);
      fs.writeFileSync(task.outputPath, prepared);
      return { id: task.id, outcome: 'prepared', byteSize: prepared.length, contentDigest: new Uint8Array(contentDigest) };
    }
    if (task.kind === 'embed-signature') {
      const { signed } = await embedExternalSignature(fs.readFileSync(task.sourcePath), { certificates: task.certificates, signature: task.signature, tsaUrl: task.tsaUrl });
      fs.writeFileSync(task.outputPath, signed);
      return { id: task.id, outcome: 'written', byteSize: signed.length };
    }
    if (task.kind === 'read-placements') {
      if (task.from === 'tags') {
        const found = await findTextTags(new Uint8Array(await fs.promises.readFile(task.path)), { maxTags: task.maxTags });
        return { id: task.id, outcome: 'placements', sources: { from: 'tags', ...found } };
      }
      const { pdf } = await loadDecrypted(task.path, `${task.path}.${task.id}`);
      return { id: task.id, outcome: 'placements', sources: { from: 'acroform', formFields: readFormFields(pdf) } };
    }
    if (task.kind === 'apply-placements') {
      const { pdf } = await loadDecrypted(task.sourcePath, task.outputPath);
      const notHidden = task.hideTags === undefined ? [] : hideTextTags(pdf, task.hideTags.tags, task.hideTags.operatorCounts).map((tag) => tag.text);
      if (task.removeFormFields !== undefined && task.removeFormFields.length > 0) removeFormFields(pdf, task.removeFormFields);
      // Drawn only where every tag's text is gone: a value over a tag still there is refused by the caller.
      if (task.drawValues !== undefined && notHidden.length === 0) await drawMergedValues(pdf, task.drawValues);
      const bytes = await pdf.save({ updateFieldAppearances: false });
      await fs.promises.writeFile(task.outputPath, bytes);
      return { id: task.id, outcome: 'placed', byteSize: bytes.length, notHidden };
    }
    if (task.kind === 'verify') {
      return {
        id: task.id,
        outcome: 'verified',
        verification: await verifyPdf(await fs.promises.readFile(task.path), { ourCertificateSha256: task.ourCertificateSha256, trustAnchors: task.trustAnchors }),
      };
    }
    if (task.kind === 'audit-pdf') {
      const bytes = await sealPdf(await buildAuditPdf(task.data, task.locale), task.seal.material, task.seal.info, remoteSigner(task.id));
      await fs.promises.writeFile(task.outputPath, bytes);
      return { id: task.id, outcome: 'written', byteSize: bytes.length };
    }
    if (task.kind === 'seal') {
      const pdf = await PDFDocument.load(await fs.promises.readFile(task.sourcePath), { updateMetadata: false });
      const bytes = await sealPdf(pdf, task.seal.material, task.seal.info, remoteSigner(task.id));
      await fs.promises.writeFile(task.outputPath, bytes);
      return { id: task.id, outcome: 'written', byteSize: bytes.length };
    }
    return { id: task.id, outcome: 'done', inspection: await inspectPdfFile(task.path) };
  } catch (error) {
    if (error instanceof PdfInspectionError) return { id: task.id, outcome: 'refused', reason: error.reason, detail: error.detail, complexity: error.complexity };
    const failure = error instanceof Error ? error : new Error(String(error));
    return { id: task.id, outcome: 'failed', message: failure.message, code: (failure as NodeJS.ErrnoException).code };
  }
}

if (parentPort === null) throw new Error('pdf/worker.ts runs only as a worker thread');
const port = parentPort;
port.on('message', (message: PdfTask | SignDigestReply) => {
  if ('signedDigest' in message) {
    const reply = message.signedDigest;
    const pending = pendingSignatures.get(reply.requestId);
    pendingSignatures.delete(reply.requestId);
    if ('signature' in reply) pending?.resolve(reply.signature);
    else pending?.reject(Object.assign(new Error(reply.error), { code: reply.code }));
    return;
  }
  const task = message;
  void run(task).then((answer) => {
    // This thread's own figures (heapTotal and external are per thread; rss is the process's).
    const { heapTotal, external } = process.memoryUsage();
    const reply: PdfWorkerReply = { ...answer, memoryBytes: heapTotal + external };
    port.postMessage(reply);
  });
});
// Tells the pool the module loaded: a worker that dies after this is worth replacing at once.
port.postMessage({ ready: true });
