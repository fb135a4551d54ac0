/**
 * The envelope the signing bench sends, and the raw script stamps: three documents of 2, 4 and 6
 * A4 pages, three signers signing one after another (orders 0, 1, 2), each with a typed
 * signature on the last page of every document and a required text field on the first page of
 * "their" document. One definition, so the service and the raw baseline draw the same values
 * into the same files.
 */
import { PDFDocument, StandardFonts } from 'pdf-lib';

export const DOCUMENT_PAGES = [2, 4, 6] as const;
export const SIGNERS = 3;
const CITIES = ['Istanbul', 'Ankara', 'Izmir'];

/** A field as the REST API creates it (`views` name documents by index here). */
export type FieldShape = {
  signer: number;
  type: 'simple_signature' | 'text';
  identifier: string;
  views: { document: number; page: number; x: number; y: number; width: number; height: number }[];
};

export const FIELDS: FieldShape[] = Array.from({ length: SIGNERS }, (_, signer): FieldShape[] => [
  {
    signer,
    type: 'simple_signature',
    identifier: `signer${signer + 1}-signature`,
    views: DOCUMENT_PAGES.map((pages, document) => ({ document, page: pages - 1, x: 60 + 170 * signer, y: 700, width: 150, height: 40 })),
  },
  {
    signer,
    type: 'text',
    identifier: `signer${signer + 1}-city`,
    views: [{ document: signer, page: 0, x: 300, y: 120 + 30 * signer, width: 140, height: 20 }],
  },
]).flat();

export function signerName(signer: number, label: string): string {
  return `Signer ${signer + 1} of ${label}`;
}

export function signerEmail(signer: number, label: string): string {
  return `signer${signer + 1}.${label}@example.com`;
}

/** The value a signer gives a field (what the signing page sends for a typed signature or a text). */
export function valueOf(field: Pick<FieldShape, 'type' | 'signer'>, label: string): Record<string, unknown> {
  return field.type === 'simple_signature' ? { kind: 'typed', text: signerName(field.signer, label), font: 'cursive' } : { text: CITIES[field.signer]! };
}

/** A contract-like document: a heading and a few paragraphs of text on each page. */
export async function makeDocument(index: number): Promise<Uint8Array<ArrayBuffer>> {
  const pdf = await PDFDocument.create();
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  const bold = await pdf.embedFont(StandardFonts.HelveticaBold);
  for (let page = 1; page <= DOCUMENT_PAGES[index]!; page += 1) {
    const sheet = pdf.addPage([595, 842]);
    sheet.drawText(`Agreement part ${index + 1}, page ${page}`, { x: 60, y: 780, size: 16, font: bold });
    for (let line = 0; line < 40; line += 1) {
      sheet.drawText(`${line + 1}. The parties agree to the terms of clause ${page}.${line + 1} as set out in the schedule.`, { x: 60, y: 740 - line * 15, size: 10, font });
    }
  }
  return new Uint8Array(await pdf.save());
}
