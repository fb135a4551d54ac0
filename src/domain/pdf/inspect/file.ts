/** Positioned reads of the file on disk through a window that grows only as far as a parse needs. */
import type { FileHandle } from 'node:fs/promises';
import { type Cursor, WindowExhausted } from './lexer.ts';
import { INITIAL_WINDOW_LENGTH, invalid, MAX_WINDOW_LENGTH, PDF_INFLATED_BYTES_LIMIT, tooComplex } from './limits.ts';

// ---------------------------------------------------------------------------------------------
// Positioned file access
// ---------------------------------------------------------------------------------------------

/**
 * `inflated` counts what the document's streams inflate to: each stream once, under the offset
 * of its data (the pages' reads and the pass over the file may both inflate the same stream).
 */
export type PdfFile = { handle: FileHandle; size: number; inflated: { total: number; byStream: Map<number, number> } };

/** Reads up to `length` bytes at `position`, fewer only where the file ends. */
export async function readBytes(file: PdfFile, position: number, length: number): Promise<Buffer> {
  const available = Math.max(0, Math.min(length, file.size - position));
  const buffer = Buffer.alloc(available);
  let filled = 0;
  while (filled < available) {
    const { bytesRead } = await file.handle.read(buffer, filled, available - filled, position + filled);
    if (bytesRead === 0) break; // The file shrank under us; parsing will report what is missing.
    filled += bytesRead;
  }
  return filled === available ? buffer : buffer.subarray(0, filled);
}

/**
 * Runs a synchronous parser over a window of the file starting at `offset`, re-reading a larger
 * window whenever the parser runs off the end of one that is not the end of the file.
 */
export async function parseWithGrowingWindow<T>(file: PdfFile, offset: number, parse: (cursor: Cursor) => T, initialWindowLength = INITIAL_WINDOW_LENGTH): Promise<T> {
  if (!Number.isSafeInteger(offset) || offset < 0 || offset >= file.size) {
    invalid(`offset ${offset} is outside the file (size ${file.size})`);
  }
  for (let windowLength = initialWindowLength; ; windowLength *= 4) {
    const bytes = await readBytes(file, offset, windowLength);
    const cursor: Cursor = { bytes, position: 0, complete: offset + bytes.length >= file.size };
    try {
      return parse(cursor);
    } catch (error) {
      if (!(error instanceof WindowExhausted)) throw error;
    }
    if (windowLength >= MAX_WINDOW_LENGTH) invalid(`the structure at offset ${offset} is larger than ${MAX_WINDOW_LENGTH} bytes`);
  }
}

// ---------------------------------------------------------------------------------------------
// Inflated bytes
// ---------------------------------------------------------------------------------------------

/** Records that the stream whose data starts at `streamDataOffset` inflates to `bytes`; refuses the file past the limit. */
export function chargeInflated(file: PdfFile, streamDataOffset: number, bytes: number, what: string): void {
  const counted = file.inflated.byStream.get(streamDataOffset) ?? 0;
  if (bytes <= counted) return;
  file.inflated.byStream.set(streamDataOffset, bytes);
  file.inflated.total += bytes - counted;
  if (file.inflated.total > PDF_INFLATED_BYTES_LIMIT) {
    tooComplex(`its streams inflate to more than ${PDF_INFLATED_BYTES_LIMIT} bytes (passed at ${what})`, 'inflated_bytes', PDF_INFLATED_BYTES_LIMIT);
  }
}
