/**
 * Incremental updates (ISO 32000-1 §7.5.6): objects appended after the end of a file with a cross-
 * reference section of their own whose trailer points back (/Prev) at the previous one, so every
 * byte an earlier signature covers stays where it was. The file is read with pdf-lib (which
 * follows every earlier update), the caller changes or adds objects in that document, and only
 * the objects it names are written. Runs in a PDF worker thread.
 */
import { PDFDict, PDFDocument, PDFName, PDFNumber, PDFRef, type PDFObject } from 'pdf-lib';

/** The last revision of `file`, to change: `write` then appends the named objects. */
export async function openForUpdate(file: Buffer): Promise<PDFDocument> {
  return PDFDocument.load(file, { updateMetadata: false });
}

/** An object given as its exact bytes (a signature dictionary whose placeholders are filled in afterwards). */
export type RawObject = { ref: PDFRef; bytes: Buffer };

function previousCrossReference(file: Buffer): number {
  const tail = file.subarray(Math.max(0, file.length - 2048)).toString('latin1');
  const matches = [...tail.matchAll(/startxref\s+(\d+)/g)];
  const last = matches.at(-1);
  if (last === undefined) throw new Error('the PDF has no startxref: it cannot be updated incrementally');
  return Number(last[1]);
}

/** `file` followed by an update holding the objects `refs` (as they are now in `pdf`) and the raw ones. */
export function appendUpdate(file: Buffer, pdf: PDFDocument, refs: PDFRef[], raw: RawObject[] = []): Buffer {
  const parts: Buffer[] = [file];
  let offset = file.length;
  const push = (bytes: Buffer) => {
    parts.push(bytes);
    offset += bytes.length;
  };
  if (file[file.length - 1] !== 0x0a) push(Buffer.from('\n'));
  const entries: { ref: PDFRef; offset: number }[] = [];
  const objects: { ref: PDFRef; bytes: Buffer }[] = [
    ...refs.map((ref) => {
      const object = pdf.context.lookup(ref) as PDFObject;
      const bytes = new Uint8Array(object.sizeInBytes());
      object.copyBytesInto(bytes, 0);
      return { ref, bytes: Buffer.from(bytes) };
    }),
    ...raw,
  ];
  for (const object of objects) {
    entries.push({ ref: object.ref, offset });
    push(Buffer.from(`${object.ref.objectNumber} ${object.ref.generationNumber} obj\n`, 'latin1'));
    push(object.bytes);
    push(Buffer.from('\nendobj\n', 'latin1'));
  }
  const xrefOffset = offset;
  entries.sort((a, b) => a.ref.objectNumber - b.ref.objectNumber);
  let table = 'xref\n';
  for (const entry of entries) {
    // One subsection per object; each entry is exactly 20 bytes.
    table += `${entry.ref.objectNumber} 1\n${String(entry.offset).padStart(10, '0')} ${String(entry.ref.generationNumber).padStart(5, '0')} n\r\n`;
  }
  const info = pdf.context.trailerInfo;
  const trailer = PDFDict.withContext(pdf.context);
  trailer.set(PDFName.of('Size'), PDFNumber.of(pdf.context.largestObjectNumber + 1));
  if (info.Root) trailer.set(PDFName.of('Root'), info.Root);
  if (info.Info) trailer.set(PDFName.of('Info'), info.Info);
  if (info.ID) trailer.set(PDFName.of('ID'), info.ID);
  trailer.set(PDFName.of('Prev'), PDFNumber.of(previousCrossReference(file)));
  push(Buffer.from(`${table}trailer\n${trailer.toString()}\nstartxref\n${xrefOffset}\n%%EOF\n`, 'latin1'));
  return Buffer.concat(parts);
}
