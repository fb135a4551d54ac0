/**
 * Incremental updates (ISO 32000-1 §7.5.6): objects appended after the end of a file with a cross-
 * reference section of their own whose trailer points back (/Prev) at the previous one, so every
 * byte of the file before stays where it was (what an earlier signature covers, and every page
 * the update does not change). The file is read with pdf-lib (which follows every earlier
 * update), the caller changes or adds objects in that document, and only the objects it names are
 * written. The new section is of the same kind as the one before it: a cross-reference table
 * after a table, a cross-reference stream (§7.5.8) after a stream. Runs in a PDF worker thread.
 */
import { deflateSync } from 'node:zlib';
import { ParseSpeeds, PDFContentStream, PDFDict, PDFDocument, PDFName, PDFNumber, type PDFObject, PDFRawStream, PDFRef } from 'pdf-lib';

/** Where the file's last cross-reference section starts, what kind it is, and the /Size it declares. */
export type PreviousSection = { offset: number; kind: 'table' | 'stream'; size: number };

/**
 * The last cross-reference section of `file`, as its final `startxref` gives it, if that offset
 * really holds one (a table's `xref` keyword, or an object whose dictionary is /Type /XRef);
 * undefined otherwise: such a file can only be rewritten whole.
 */
export function previousSection(file: Uint8Array): PreviousSection | undefined {
  const bytes = Buffer.from(file.buffer, file.byteOffset, file.byteLength);
  const tail = bytes.subarray(Math.max(0, bytes.length - 2048)).toString('latin1');
  const last = [...tail.matchAll(/startxref\s+(\d+)/g)].at(-1);
  if (last === undefined) return undefined;
  const offset = Number(last[1]);
  if (!Number.isSafeInteger(offset) || offset >= bytes.length) return undefined;
  const head = bytes.subarray(offset, Math.min(bytes.length, offset + 4096)).toString('latin1');
  if (head.startsWith('xref')) {
    // The trailer follows the table's entries (20 bytes each): read its /Size from there.
    const trailerAt = bytes.indexOf('trailer', offset, 'latin1');
    if (trailerAt === -1) return undefined;
    const size = /\/Size\s+(\d+)/.exec(bytes.subarray(trailerAt, Math.min(bytes.length, trailerAt + 4096)).toString('latin1'));
    return size === null ? undefined : { offset, kind: 'table', size: Number(size[1]) };
  }
  const object = /^\d+\s+\d+\s+obj\s*<<([\s\S]*?)stream/.exec(head);
  if (object === null || !/\/Type\s*\/XRef\b/.test(object[1]!)) return undefined;
  const size = /\/Size\s+(\d+)/.exec(object[1]!);
  return size === null ? undefined : { offset, kind: 'stream', size: Number(size[1]) };
}

/**
 * New objects must not take a number the file already gave, even to an object pdf-lib does not
 * keep (a cross-reference stream is itself an object): numbering goes on from the declared /Size.
 */
export function reserveExistingNumbers(pdf: PDFDocument, previous: PreviousSection): void {
  pdf.context.largestObjectNumber = Math.max(pdf.context.largestObjectNumber, previous.size - 1);
}

/** The last revision of `file`, to change: `appendUpdate` then appends the named objects. */
export async function openForUpdate(file: Buffer): Promise<PDFDocument> {
  const pdf = await PDFDocument.load(file, { updateMetadata: false, parseSpeed: ParseSpeeds.Fastest });
  const previous = previousSection(file);
  if (previous !== undefined) reserveExistingNumbers(pdf, previous);
  return pdf;
}

/** An object given as its exact bytes (a signature dictionary whose placeholders are filled in afterwards). */
export type RawObject = { ref: PDFRef; bytes: Buffer };

/** The objects numbered above `since`: those added to the document since then. */
export function objectsAddedSince(pdf: PDFDocument, since: number): PDFRef[] {
  return pdf.context
    .enumerateIndirectObjects()
    .map(([ref]) => ref)
    .filter((ref) => ref.objectNumber > since);
}

function bytesOf(object: PDFObject): Buffer {
  // A content stream pdf-lib drew into is compressed by pako when it is written, which costs a
  // fresh 64 KB window per stream, for a few hundred bytes on each page: Node's zlib does the same
  // (the same format and level) natively.
  if (object instanceof PDFContentStream && object.dict.get(PDFName.of('Filter')) === PDFName.of('FlateDecode')) {
    return bytesOf(PDFRawStream.of(object.dict.clone(), deflateSync(object.getUnencodedContents())));
  }
  const bytes = Buffer.alloc(object.sizeInBytes());
  object.copyBytesInto(bytes, 0);
  return bytes;
}

/** `file` followed by an update holding the objects `refs` (as they are now in `pdf`) and the raw ones. */
export function appendUpdate(file: Buffer, pdf: PDFDocument, refs: PDFRef[], raw: RawObject[] = []): Buffer {
  const previous = previousSection(file);
  if (previous === undefined) throw new Error('the PDF has no cross-reference section at its startxref: it cannot be updated incrementally');
  const parts: Buffer[] = [file];
  let offset = file.length;
  const push = (bytes: Buffer) => {
    parts.push(bytes);
    offset += bytes.length;
  };
  if (file[file.length - 1] !== 0x0a) push(Buffer.from('\n'));
  const seen = new Set<string>();
  const objects: { ref: PDFRef; bytes: Buffer }[] = [];
  for (const ref of refs) {
    if (seen.has(ref.tag)) continue;
    seen.add(ref.tag);
    objects.push({ ref, bytes: bytesOf(pdf.context.lookup(ref) as PDFObject) });
  }
  objects.push(...raw);
  const entries: { ref: PDFRef; offset: number }[] = [];
  for (const object of objects) {
    entries.push({ ref: object.ref, offset });
    push(Buffer.from(`${object.ref.objectNumber} ${object.ref.generationNumber} obj\n`, 'latin1'));
    push(object.bytes);
    push(Buffer.from('\nendobj\n', 'latin1'));
  }
  const info = pdf.context.trailerInfo;
  const trailer = PDFDict.withContext(pdf.context);
  const largest = Math.max(pdf.context.largestObjectNumber, previous.size - 1, ...entries.map((entry) => entry.ref.objectNumber));
  if (info.Root) trailer.set(PDFName.of('Root'), info.Root);
  if (info.Info) trailer.set(PDFName.of('Info'), info.Info);
  if (info.ID) trailer.set(PDFName.of('ID'), info.ID);
  trailer.set(PDFName.of('Prev'), PDFNumber.of(previous.offset));
  entries.sort((a, b) => a.ref.objectNumber - b.ref.objectNumber);
  const sectionOffset = offset;

  if (previous.kind === 'table') {
    trailer.set(PDFName.of('Size'), PDFNumber.of(largest + 1));
    let table = 'xref\n';
    for (const entry of entries) {
      // One subsection per object; each entry is exactly 20 bytes.
      table += `${entry.ref.objectNumber} 1\n${String(entry.offset).padStart(10, '0')} ${String(entry.ref.generationNumber).padStart(5, '0')} n\r\n`;
    }
    push(Buffer.from(`${table}trailer\n${trailer.toString()}\nstartxref\n${sectionOffset}\n%%EOF\n`, 'latin1'));
    return Buffer.concat(parts);
  }

  // A cross-reference stream: itself a new object, listed in its own section (§7.5.8.3), its
  // entries unfiltered binary (type 1, offset, generation) in runs of consecutive numbers.
  const self = PDFRef.of(largest + 1);
  entries.push({ ref: self, offset: sectionOffset });
  const offsetWidth = Math.max(1, Math.ceil(Math.log2(sectionOffset + 1) / 8));
  const generationWidth = Math.max(1, ...entries.map((entry) => Math.ceil(Math.log2(entry.ref.generationNumber + 1) / 8)));
  const rowWidth = 1 + offsetWidth + generationWidth;
  const data = Buffer.alloc(entries.length * rowWidth);
  const index: number[] = [];
  entries.forEach((entry, row) => {
    const at = row * rowWidth;
    data[at] = 1;
    data.writeUIntBE(entry.offset, at + 1, offsetWidth);
    data.writeUIntBE(entry.ref.generationNumber, at + 1 + offsetWidth, generationWidth);
    const run = index.length - 2;
    if (run >= 0 && index[run]! + index[run + 1]! === entry.ref.objectNumber) index[run + 1]! += 1;
    else index.push(entry.ref.objectNumber, 1);
  });
  trailer.set(PDFName.of('Type'), PDFName.of('XRef'));
  trailer.set(PDFName.of('Size'), PDFNumber.of(self.objectNumber + 1));
  trailer.set(PDFName.of('Index'), pdf.context.obj(index));
  trailer.set(PDFName.of('W'), pdf.context.obj([1, offsetWidth, generationWidth]));
  trailer.set(PDFName.of('Length'), PDFNumber.of(data.length));
  push(Buffer.from(`${self.objectNumber} 0 obj\n${trailer.toString()}\nstream\n`, 'latin1'));
  push(data);
  push(Buffer.from(`\nendstream\nendobj\nstartxref\n${sectionOffset}\n%%EOF\n`, 'latin1'));
  return Buffer.concat(parts);
}
