/**
 * Reads a ZIP that someone else may have made (the offline verifier's evidence packages), with
 * every claim the file makes about itself checked before it is believed:
 *
 * - one entry per name: a second entry of the same name would let a reader that takes the first
 *   and one that takes the last see different packages;
 * - each entry's local header names the entry its central directory record names (tools that
 *   walk local headers and tools that read the central directory must see the same names);
 * - entries do not overlap: one compressed stream shared by many records is how a small file
 *   inflates to terabytes, and the bound below is per entry;
 * - each entry inflates in chunks, and inflating stops at `maxEntryBytes` (whatever size the
 *   record declares): a 1 GB entry in a 1 MB file costs at most the bound in memory, never its
 *   own size.
 *
 * The file is read where it lies (`ZipSource`: a file descriptor for the command line), the
 * directory once and each entry's bytes when it is read; entries are inflated when read and not
 * kept, so a caller holds one entry at a time, never the whole package.
 */
import fs from 'node:fs';
import { crc32, inflateRawSync } from 'node:zlib';

/** The stable names of what can be wrong with the ZIP itself (docs/artefacts.md). */
export const ZIP_FAILURES = {
  notZip: 'EvidencePackage.NotZip',
  duplicateEntry: 'EvidencePackage.DuplicateEntry',
  entryNameMismatch: 'EvidencePackage.EntryNameMismatch',
  overlappingEntry: 'EvidencePackage.OverlappingEntry',
  entryTooLarge: 'EvidencePackage.EntryTooLarge',
  entryDamaged: 'EvidencePackage.EntryDamaged',
} as const;

export type ZipFailureName = (typeof ZIP_FAILURES)[keyof typeof ZIP_FAILURES];

/** Thrown for the file as a whole (no central directory, ZIP64): nothing in it can be read. */
export class ZipFormatError extends Error {
  readonly failure = ZIP_FAILURES.notZip;
}

/** Thrown by `read` when one entry cannot be given back as what its record says. */
export class ZipEntryError extends Error {
  readonly failure: ZipFailureName;
  constructor(failure: ZipFailureName, message: string) {
    super(message);
    this.failure = failure;
  }
}

export type ZipEntry = {
  name: string;
  /** The inflated size its central directory record declares (checked when it is read). */
  declaredSize: number;
  /** Its bytes, inflated at most up to the bound, checked against its size and CRC-32. */
  read(): Buffer;
};

export type ZipProblem = { path: string; failure: ZipFailureName; message: string };

/** Where the ZIP's bytes are: its size, and a way to read a range of them. */
export type ZipSource = { size: number; read(offset: number, length: number): Buffer };

export function bufferSource(bytes: Buffer): ZipSource {
  return { size: bytes.length, read: (offset, length) => bytes.subarray(offset, Math.min(bytes.length, offset + length)) };
}

/** A file read through its descriptor, range by range (closed by the caller). */
export function fileSource(fd: number): ZipSource {
  const size = fs.fstatSync(fd).size;
  return {
    size,
    read(offset, length) {
      const buffer = Buffer.alloc(Math.max(0, Math.min(length, size - offset)));
      let done = 0;
      while (done < buffer.length) {
        const read = fs.readSync(fd, buffer, done, buffer.length - done, offset + done);
        if (read === 0) break;
        done += read;
      }
      return buffer.subarray(0, done);
    },
  };
}

type Record = { name: string; method: number; crc: number; compressedSize: number; declaredSize: number; localOffset: number; dataStart: number };

const END_OF_CENTRAL_DIRECTORY = 0x06054b50;
const CENTRAL_DIRECTORY_HEADER = 0x02014b50;
const LOCAL_FILE_HEADER = 0x04034b50;

/**
 * The entries of a ZIP (stored or deflated). Problems found in the directory are answered as
 * `problems`; an entry with one is left out of `entries`, except that the first of several
 * entries of one name stays so that the package's other checks can still name what they find.
 */
export function openZip(source: ZipSource, options: { maxEntryBytes: number }): { entries: Map<string, ZipEntry>; problems: ZipProblem[] } {
  // The end record is in the last 64 KiB + 22 bytes (its comment is at most 65,535 bytes).
  const tailStart = Math.max(0, source.size - 65_557);
  const tail = source.read(tailStart, source.size - tailStart);
  let end = -1;
  for (let offset = tail.length - 22; offset >= 0; offset--) {
    if (tail.readUInt32LE(offset) === END_OF_CENTRAL_DIRECTORY) {
      end = offset;
      break;
    }
  }
  if (end === -1) throw new ZipFormatError('not a ZIP file (no end of central directory)');
  const count = tail.readUInt16LE(end + 10);
  const directorySize = tail.readUInt32LE(end + 12);
  const directoryOffset = tail.readUInt32LE(end + 16);
  // Evidence packages never need ZIP64 (the service's packages are far below 4 GiB); its markers here mean the file is not one.
  if (count === 0xffff || directoryOffset === 0xffffffff || directorySize === 0xffffffff) throw new ZipFormatError('ZIP64 packages are not evidence packages of this service');
  if (directoryOffset + directorySize > tailStart + end) throw new ZipFormatError('the ZIP central directory is damaged');
  const directory = source.read(directoryOffset, directorySize);
  const problems: ZipProblem[] = [];
  const records: Record[] = [];
  const seen = new Set<string>();
  let cursor = 0;
  for (let index = 0; index < count; index++) {
    if (cursor + 46 > directory.length || directory.readUInt32LE(cursor) !== CENTRAL_DIRECTORY_HEADER) throw new ZipFormatError('the ZIP central directory is damaged');
    const nameLength = directory.readUInt16LE(cursor + 28);
    const extraLength = directory.readUInt16LE(cursor + 30);
    const commentLength = directory.readUInt16LE(cursor + 32);
    if (cursor + 46 + nameLength > directory.length) throw new ZipFormatError('the ZIP central directory is damaged');
    const nameBytes = directory.subarray(cursor + 46, cursor + 46 + nameLength);
    const name = nameBytes.toString('utf8');
    const record = {
      name,
      method: directory.readUInt16LE(cursor + 10),
      crc: directory.readUInt32LE(cursor + 16),
      compressedSize: directory.readUInt32LE(cursor + 20),
      declaredSize: directory.readUInt32LE(cursor + 24),
      localOffset: directory.readUInt32LE(cursor + 42),
      dataStart: -1,
    };
    cursor += 46 + nameLength + extraLength + commentLength;
    if (seen.has(name)) {
      problems.push({ path: name, failure: ZIP_FAILURES.duplicateEntry, message: 'the ZIP holds more than one entry of this name' });
      continue;
    }
    seen.add(name);
    const local = source.read(record.localOffset, 30 + nameLength);
    if (local.length < 30 || local.readUInt32LE(0) !== LOCAL_FILE_HEADER) {
      problems.push({ path: name, failure: ZIP_FAILURES.entryDamaged, message: 'cannot be read from the ZIP: its local header is damaged' });
      continue;
    }
    const localNameLength = local.readUInt16LE(26);
    const localName = local.subarray(30, 30 + localNameLength);
    if (localNameLength !== nameLength || !localName.equals(nameBytes)) {
      const shown = localNameLength === nameLength ? localName.toString('utf8') : source.read(record.localOffset + 30, Math.min(localNameLength, 1024)).toString('utf8');
      problems.push({ path: name, failure: ZIP_FAILURES.entryNameMismatch, message: `its local header names it ${JSON.stringify(shown)}, not what the central directory names it` });
      continue;
    }
    record.dataStart = record.localOffset + 30 + localNameLength + local.readUInt16LE(28);
    if (record.dataStart + record.compressedSize > source.size) {
      problems.push({ path: name, failure: ZIP_FAILURES.entryDamaged, message: 'cannot be read from the ZIP: its data runs past the end of the file' });
      continue;
    }
    records.push(record);
  }
  // No entry's header or data may lie inside another's.
  const byOffset = [...records].sort((a, b) => a.localOffset - b.localOffset);
  const overlapping = new Set<Record>();
  for (let index = 1; index < byOffset.length; index++) {
    const before = byOffset[index - 1]!;
    const record = byOffset[index]!;
    if (record.localOffset < before.dataStart + before.compressedSize) {
      overlapping.add(before);
      overlapping.add(record);
    }
  }
  const entries = new Map<string, ZipEntry>();
  for (const record of records) {
    if (overlapping.has(record)) {
      problems.push({ path: record.name, failure: ZIP_FAILURES.overlappingEntry, message: 'its data overlaps another entry of the ZIP' });
      continue;
    }
    if (record.name.endsWith('/')) continue;
    entries.set(record.name, { name: record.name, declaredSize: record.declaredSize, read: () => readEntry(source, record, options.maxEntryBytes) });
  }
  return { entries, problems };
}

/** Deflate's worst case on incompressible data is a few bytes per 16 KiB block; anything beyond this is not an entry within the bound. */
function maxCompressedBytes(maxEntryBytes: number): number {
  return maxEntryBytes + Math.ceil(maxEntryBytes / 1024) + 1024;
}

function readEntry(source: ZipSource, record: Record, maxEntryBytes: number): Buffer {
  const tooLarge = () => new ZipEntryError(ZIP_FAILURES.entryTooLarge, `it inflates to more than ${maxEntryBytes} bytes, the most an entry of an evidence package may hold`);
  if (record.declaredSize > maxEntryBytes || record.compressedSize > maxCompressedBytes(maxEntryBytes)) throw tooLarge();
  const raw = source.read(record.dataStart, record.compressedSize);
  let data: Buffer;
  if (record.method === 0) data = raw;
  else if (record.method === 8) {
    try {
      // Inflated chunk by chunk; zlib stops (ERR_BUFFER_TOO_LARGE) once the output would pass the bound.
      data = inflateRawSync(raw, { maxOutputLength: maxEntryBytes });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' || error instanceof RangeError) throw tooLarge();
      throw new ZipEntryError(ZIP_FAILURES.entryDamaged, `cannot be read from the ZIP: ${(error as Error).message}`);
    }
  } else throw new ZipEntryError(ZIP_FAILURES.entryDamaged, `cannot be read from the ZIP: compression method ${record.method} is not supported`);
  if (data.length > maxEntryBytes) throw tooLarge();
  if (data.length !== record.declaredSize)
    throw new ZipEntryError(ZIP_FAILURES.entryDamaged, `cannot be read from the ZIP: it inflates to ${data.length} bytes, not the ${record.declaredSize} its record declares`);
  if (crc32(data) >>> 0 !== record.crc) throw new ZipEntryError(ZIP_FAILURES.entryDamaged, 'cannot be read from the ZIP: its bytes do not match the ZIP checksum (CRC-32)');
  return data;
}
