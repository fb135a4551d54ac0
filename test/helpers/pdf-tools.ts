import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { crc32, deflateSync } from 'node:zlib';

/**
 * Word boxes from `pdftotext -bbox` (poppler-utils), per page, in points from the displayed
 * top-left. `-cropbox`: poppler's tools show the MediaBox unless told, viewers the CropBox.
 */
export function wordBoxes(pdfPath: string): { text: string; xMin: number; yMin: number; xMax: number; yMax: number }[][] {
  const html = execFileSync('pdftotext', ['-bbox', '-cropbox', pdfPath, '-'], { encoding: 'utf8' });
  return html
    .split('<page ')
    .slice(1)
    .map((page) =>
      [...page.matchAll(/<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">([^<]*)<\/word>/g)].map((match) => ({
        xMin: Number(match[1]),
        yMin: Number(match[2]),
        xMax: Number(match[3]),
        yMax: Number(match[4]),
        text: match[5]!
          .replace(/&amp;/g, '&')
          .replace(/&lt;/g, '<')
          .replace(/&gt;/g, '>')
          .replace(/&quot;/g, '"'),
      })),
    );
}

/** A page rendered at 72 dpi (one pixel per point) in grey levels, by `pdftoppm`. */
export function renderPageGrey(pdfPath: string, page: number): { width: number; height: number; pixel(x: number, y: number): number } {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'ppm-'));
  try {
    execFileSync('pdftoppm', ['-r', '72', '-gray', '-cropbox', '-f', String(page + 1), '-l', String(page + 1), '-singlefile', pdfPath, path.join(directory, 'p')]);
    const bytes = fs.readFileSync(path.join(directory, 'p.pgm'));
    const header = /^P5\s+(\d+)\s+(\d+)\s+255\s/.exec(bytes.toString('latin1', 0, 40))!;
    const offset = header[0].length;
    const width = Number(header[1]);
    const height = Number(header[2]);
    return { width, height, pixel: (x, y) => bytes[offset + y * width + x]! };
  } finally {
    fs.rmSync(directory, { recursive: true, force: true });
  }
}

/** A small opaque PNG (black), as a data URL. */
export function blackPngDataUrl(width = 8, height = 4): string {
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([length, body, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 0; // greyscale
  const raw = Buffer.alloc((width + 1) * height); // filter byte 0 and black pixels
  const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr), chunk('IDAT', deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]);
  return `data:image/png;base64,${png.toString('base64')}`;
}

/** `pdfsig` output for a file (poppler-utils), as text; it exits non-zero for some invalid files. */
export function pdfsig(pdfPath: string): string {
  try {
    return execFileSync('pdfsig', [pdfPath], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (error) {
    return String((error as { stdout?: string }).stdout ?? '') + String((error as { stderr?: string }).stderr ?? '');
  }
}
