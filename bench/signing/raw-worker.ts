/**
 * The signing bench's physical limit, one thread of it: per envelope, each of the three
 * documents loaded with pdf-lib, the same field values stamped in with a standard font (no font
 * embedding, no layout beyond one line), sealed with the service's own PAdES code
 * (src/domain/pdf/seal.ts: @signpdf + pkijs, the same certificate), and written to disk. Nothing
 * else: no database, no HTTP, no queue, no mail.
 *
 * The main thread (raw.ts) starts a few of these: each does one envelope untimed, says `ready`,
 * waits for `go`, then does its share and reports when it is done.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { type SealMaterial, sealPdf } from '../../src/domain/pdf/seal.ts';

export type RawStamp = { document: number; page: number; x: number; y: number; width: number; height: number; text: string; signature: boolean };
export type RawWorkerData = { documents: Uint8Array[]; stamps: RawStamp[]; material: SealMaterial; envelopes: number; outDir: string; thread: number };

const data = workerData as RawWorkerData;

async function envelope(number: number): Promise<void> {
  for (const [index, bytes] of data.documents.entries()) {
    const pdf = await PDFDocument.load(bytes);
    const font = await pdf.embedFont(StandardFonts.Helvetica);
    const italic = await pdf.embedFont(StandardFonts.HelveticaOblique);
    const pages = pdf.getPages();
    for (const stamp of data.stamps) {
      if (stamp.document !== index) continue;
      const page = pages[stamp.page]!;
      const bottom = page.getHeight() - stamp.y - stamp.height;
      if (stamp.signature) {
        const size = Math.min(stamp.height * 0.6, (stamp.width / italic.widthOfTextAtSize(stamp.text, 10)) * 10);
        page.drawText(stamp.text, { x: stamp.x, y: bottom + stamp.height * 0.25, size, font: italic });
      } else {
        page.drawText(stamp.text, { x: stamp.x + 2, y: bottom + 5, size: 10, font });
      }
    }
    const sealed = await sealPdf(pdf, data.material, { reason: `raw ${data.thread}-${number}-${index}`, name: 'Envelope service', signingTime: new Date() });
    await fs.promises.writeFile(path.join(data.outDir, `raw-${data.thread}-${index}.pdf`), sealed);
  }
}

await envelope(0);
parentPort!.postMessage({ kind: 'ready' });
parentPort!.once('message', async () => {
  const started = process.hrtime.bigint();
  for (let number = 1; number <= data.envelopes; number += 1) await envelope(number);
  parentPort!.postMessage({ kind: 'done', ms: Number(process.hrtime.bigint() - started) / 1e6 });
});
