/**
 * ASCIIHexDecode and ASCII85Decode as streams, for content streams that some producers wrap in
 * them (usually before FlateDecode): their operators are counted like any other's. Both shrink
 * what they decode, so they add nothing to what a stream may inflate to. Lenient as viewers are:
 * characters outside the alphabet are skipped, the data ends at its end marker or the stream's end.
 */
import { Transform, type TransformCallback } from 'node:stream';

const isWhite = (byte: number) => byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09 || byte === 0x0c || byte === 0x00;

function hexValue(byte: number): number {
  if (byte >= 0x30 && byte <= 0x39) return byte - 0x30;
  if (byte >= 0x41 && byte <= 0x46) return byte - 0x41 + 10;
  if (byte >= 0x61 && byte <= 0x66) return byte - 0x61 + 10;
  return -1;
}

/** Two hex digits a byte, white space ignored, `>` ends the data (an odd last digit is followed by 0). */
export class AsciiHexDecoder extends Transform {
  private high = -1;
  private ended = false;

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    const out = Buffer.allocUnsafe(Math.ceil(chunk.length / 2));
    let length = 0;
    for (let index = 0; index < chunk.length && !this.ended; index++) {
      const byte = chunk[index]!;
      if (byte === 0x3e) {
        this.ended = true;
        break;
      }
      const value = hexValue(byte);
      if (value < 0) continue;
      if (this.high < 0) this.high = value;
      else {
        out[length++] = this.high * 16 + value;
        this.high = -1;
      }
    }
    done(null, out.subarray(0, length));
  }

  override _flush(done: TransformCallback): void {
    done(null, this.high >= 0 ? Buffer.from([this.high * 16]) : undefined);
  }
}

/** Five characters `!`..`u` four bytes, `z` four zero bytes, `~>` ends the data; a short last group is padded with `u`. */
export class Ascii85Decoder extends Transform {
  private group: number[] = [];
  private ended = false;

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    const out = Buffer.allocUnsafe(chunk.length * 4 + 4);
    let length = 0;
    for (let index = 0; index < chunk.length && !this.ended; index++) {
      const byte = chunk[index]!;
      if (byte === 0x7e) {
        this.ended = true;
        break;
      }
      if (isWhite(byte)) continue;
      if (byte === 0x7a && this.group.length === 0) {
        out.writeUInt32BE(0, length);
        length += 4;
        continue;
      }
      if (byte < 0x21 || byte > 0x75) continue;
      this.group.push(byte - 0x21);
      if (this.group.length === 5) {
        length = this.writeGroup(out, length, 4);
        this.group = [];
      }
    }
    done(null, out.subarray(0, length));
  }

  override _flush(done: TransformCallback): void {
    if (this.group.length < 2) return done(null, undefined);
    const kept = this.group.length - 1;
    while (this.group.length < 5) this.group.push(84);
    const out = Buffer.alloc(4);
    this.writeGroup(out, 0, kept);
    done(null, out.subarray(0, kept));
  }

  private writeGroup(out: Buffer, at: number, bytes: number): number {
    let value = 0;
    for (const digit of this.group) value = value * 85 + digit;
    // A group past 2^32 − 1 is malformed; viewers wrap it, and so does this.
    const word = value % 0x1_0000_0000;
    const four = [word >>> 24, (word >>> 16) & 0xff, (word >>> 8) & 0xff, word & 0xff];
    for (let index = 0; index < bytes; index++) out[at + index] = four[index]!;
    return at + bytes;
  }
}
