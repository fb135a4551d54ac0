import fs from 'node:fs';
import type { AttachmentContentType } from './field-values.ts';
import { fieldLimits } from './field-values.ts';

/**
 * What an uploaded attachment is, judged from its bytes alone (the name and the type a browser
 * claims are the signer's word, and a PDF named `payslip.png` is still a PDF). Images are measured
 * from their headers, without decoding a pixel: a few hundred bytes can claim 100,000 × 100,000
 * pixels, which pdf-lib would try to inflate into 40 GB when the sealed PDF is made.
 */

export type AttachmentContent = { kind: 'pdf' } | { kind: 'image'; contentType: 'image/png' | 'image/jpeg'; width: number; height: number } | { kind: 'unknown' };

/** Why an image was refused: its header claims too many pixels, or it is not a well-formed image. */
export type ImageProblem = { reason: 'too_large'; width: number; height: number } | { reason: 'damaged'; contentType: 'image/png' | 'image/jpeg'; detail: string };

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
/** PDF readers look for the header within the first KiB (some files carry junk before it). */
const PDF_HEADER_WINDOW = 1024;

export function contentTypeOf(content: AttachmentContent): AttachmentContentType | undefined {
  if (content.kind === 'pdf') return 'application/pdf';
  if (content.kind === 'image') return content.contentType;
  return undefined;
}

async function readAt(handle: fs.promises.FileHandle, position: number, length: number): Promise<Buffer> {
  const buffer = Buffer.alloc(length);
  const { bytesRead } = await handle.read(buffer, 0, length, position);
  return buffer.subarray(0, bytesRead);
}

/**
 * Sniffs the staged file at `filePath` and, for an image, walks its structure far enough to know
 * its size and that it is whole. Answers the content, or the image's problem.
 */
export async function sniffAttachment(filePath: string): Promise<{ content: AttachmentContent } | { problem: ImageProblem }> {
  const handle = await fs.promises.open(filePath, 'r');
  try {
    const { size } = await handle.stat();
    const head = await readAt(handle, 0, Math.min(size, PDF_HEADER_WINDOW));
    if (head.subarray(0, PNG_SIGNATURE.length).equals(PNG_SIGNATURE)) return await pngContent(handle, size);
    if (head.length >= 3 && head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) return await jpegContent(handle, size);
    if (head.includes('%PDF-', 0, 'latin1')) return { content: { kind: 'pdf' } };
    return { content: { kind: 'unknown' } };
  } finally {
    await handle.close();
  }
}

function tooLarge(width: number, height: number): boolean {
  return width > fieldLimits.attachmentImageMaxSide || height > fieldLimits.attachmentImageMaxSide || width * height > fieldLimits.attachmentImageMaxPixels;
}

/** Colour types and the bit depths PNG allows with each (PNG spec, table 11.1). */
const PNG_BIT_DEPTHS: Record<number, number[]> = { 0: [1, 2, 4, 8, 16], 2: [8, 16], 3: [1, 2, 4, 8], 4: [8, 16], 6: [8, 16] };

/**
 * IHDR first (its size read and bounded before anything else), then the chunk lengths followed
 * to IEND, which must end the file, with image data on the way: a truncated upload is refused
 * now, not when the sealed PDF is made after the signer has gone. Pixels are never inflated here.
 */
async function pngContent(handle: fs.promises.FileHandle, size: number): Promise<{ content: AttachmentContent } | { problem: ImageProblem }> {
  const damaged = (detail: string) => ({ problem: { reason: 'damaged' as const, contentType: 'image/png' as const, detail } });
  const ihdr = await readAt(handle, 8, 25);
  if (ihdr.length < 25 || ihdr.readUInt32BE(0) !== 13 || ihdr.toString('latin1', 4, 8) !== 'IHDR') return damaged('the first chunk is not IHDR');
  const width = ihdr.readUInt32BE(8);
  const height = ihdr.readUInt32BE(12);
  if (width === 0 || height === 0) return damaged('zero width or height');
  if (tooLarge(width, height)) return { problem: { reason: 'too_large', width, height } };
  const bitDepth = ihdr[16]!;
  const colourType = ihdr[17]!;
  if (!PNG_BIT_DEPTHS[colourType]?.includes(bitDepth)) return damaged(`colour type ${colourType} with bit depth ${bitDepth} is not a PNG combination`);
  let offset = 8;
  let sawImageData = false;
  while (offset + 12 <= size) {
    const header = await readAt(handle, offset, 8);
    const length = header.readUInt32BE(0);
    const type = header.toString('latin1', 4, 8);
    if (!/^[A-Za-z]{4}$/.test(type)) return damaged('a chunk has no valid type');
    const end = offset + 12 + length;
    if (end > size) return damaged(`chunk ${type} runs past the end of the file (truncated?)`);
    if (type === 'IDAT') sawImageData = true;
    if (type === 'IEND') {
      if (!sawImageData) return damaged('no image data');
      return { content: { kind: 'image', contentType: 'image/png', width, height } };
    }
    offset = end;
  }
  return damaged('no IEND chunk (truncated?)');
}

/** Start-of-frame markers carry the size; C4 (DHT), C8 (JPG) and CC (DAC) share the range but are not frames. */
function isStartOfFrame(marker: number): boolean {
  return marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
}

/**
 * Walks the JPEG's marker segments from SOI to the first start-of-frame, whose header holds the
 * size and the number of colour components (1, 3 or 4: what a PDF's DCTDecode shows).
 */
async function jpegContent(handle: fs.promises.FileHandle, size: number): Promise<{ content: AttachmentContent } | { problem: ImageProblem }> {
  const damaged = (detail: string) => ({ problem: { reason: 'damaged' as const, contentType: 'image/jpeg' as const, detail } });
  let offset = 2;
  while (offset + 4 <= size) {
    const header = await readAt(handle, offset, 4);
    if (header[0] !== 0xff) return damaged('a segment does not start with a marker');
    const marker = header[1]!;
    // Fill bytes and markers without a length (RSTn, TEM).
    if (marker === 0xff) {
      offset += 1;
      continue;
    }
    if ((marker >= 0xd0 && marker <= 0xd7) || marker === 0x01) {
      offset += 2;
      continue;
    }
    if (marker === 0xd9 || marker === 0xda) return damaged('no frame header before the image data');
    const length = header.readUInt16BE(2);
    if (length < 2 || offset + 2 + length > size) return damaged('a segment runs past the end of the file (truncated?)');
    if (isStartOfFrame(marker)) {
      const frame = await readAt(handle, offset + 4, 6);
      if (frame.length < 6) return damaged('a frame header is cut short');
      const height = frame.readUInt16BE(1);
      const width = frame.readUInt16BE(3);
      const components = frame[5]!;
      if (width === 0 || height === 0) return damaged('zero width or height (a DNL height is not supported)');
      if (tooLarge(width, height)) return { problem: { reason: 'too_large', width, height } };
      if (![1, 3, 4].includes(components)) return damaged(`${components} colour components (1, 3 or 4 are shown)`);
      return { content: { kind: 'image', contentType: 'image/jpeg', width, height } };
    }
    offset += 2 + length;
  }
  return damaged('no frame header (truncated?)');
}
