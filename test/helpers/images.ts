import { deflateSync } from 'node:zlib';

function crc32(bytes: Buffer): number {
  let crc = ~0;
  for (const byte of bytes) {
    crc ^= byte;
    for (let bit = 0; bit < 8; bit += 1) crc = (crc >>> 1) ^ (0xedb88320 & -(crc & 1));
  }
  return ~crc >>> 0;
}

/** A PNG file: signature, IHDR for `width` × `height` 8-bit RGB, one IDAT holding `pixels` deflated, IEND. */
function pngFile(width: number, height: number, pixels: Buffer): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(Buffer.concat([Buffer.from(type), data])));
    return Buffer.concat([length, Buffer.from(type), data, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8);
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', header), chunk('IDAT', deflateSync(pixels)), chunk('IEND', Buffer.alloc(0))]);
}

/** A real (tiny, solid) PNG of the given size. */
export function png(width: number, height: number): Buffer {
  const rows = Buffer.alloc((width * 3 + 1) * height, 0x40);
  for (let row = 0; row < height; row += 1) rows[row * (width * 3 + 1)] = 0;
  return pngFile(width, height, rows);
}

/**
 * A well-formed PNG whose header claims `width` × `height` pixels but carries only a few bytes of
 * image data: what a decompression bomb looks like before anything inflates it.
 */
export function pngClaiming(width: number, height: number): Buffer {
  return pngFile(width, height, Buffer.alloc(64));
}
