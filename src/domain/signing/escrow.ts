/**
 * Escrowed copies (issue 33 item 5): until an envelope is finalized, what a recipient can download
 * of a document is the original marked on every page as not executed, never sealed, so a copy
 * saved from the signing page can never pass for the executed document. The executed (sealed)
 * copy exists only once the last recipient has completed (artefact/artefact.service.ts), and reaches
 * recipients through their final-copy link (artefact/final-copy.service.ts), which refuses an
 * envelope that is not finalized. It lives with the signing side, which alone serves it (a
 * signer's download while the workflow runs); the artefact folder comes after the workflow and
 * imports it, never the other way round.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { ServiceContext } from '../service-context.ts';

/** The mark, in the languages the signing page speaks (en-US otherwise). */
export const ESCROW_LABELS = {
  'en-US': 'NOT EXECUTED — signing in progress',
  'tr-TR': 'İMZA SÜRECİ TAMAMLANMADI — imzalama devam ediyor',
} as const;

export function escrowLabel(locale: string | null | undefined): string {
  return locale === 'tr-TR' ? ESCROW_LABELS['tr-TR'] : ESCROW_LABELS['en-US'];
}

/**
 * The original of a document with the escrow mark across the top of every page, unsealed and
 * without the values submitted so far (the signing page draws those itself over the pages).
 * Rendered in a PDF worker thread into a temporary file that goes away once the stream closes.
 */
export async function renderEscrowedCopy(
  context: Pick<ServiceContext, 'blobStore' | 'pdfWorkers'>,
  document: { contentSha256: string; teamId: string },
  locale: string | null | undefined,
  /** One page only (index from 0), as a one-page PDF: what the signing page fetches page by page. */
  onlyPage?: number,
): Promise<{ stream: Readable; byteSize: number }> {
  const directory = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'escrow-'));
  const cleanup = () => fs.promises.rm(directory, { recursive: true, force: true });
  try {
    const outputPath = path.join(directory, 'escrowed.pdf');
    const source = await context.blobStore.localCopy(document.contentSha256);
    let byteSize: number;
    try {
      ({ byteSize } = await context.pdfWorkers.render(
        { sourcePath: source.path, outputPath, fields: [], draft: true, draftLabel: escrowLabel(locale), onlyPage },
        { team: document.teamId },
      ));
    } finally {
      source.release();
    }
    const stream = fs.createReadStream(outputPath);
    stream.once('close', () => void cleanup());
    return { stream, byteSize };
  } catch (error) {
    await cleanup();
    throw error;
  }
}
