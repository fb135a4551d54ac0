/**
 * A team's logo (issue 24): a PNG or JPEG given as base64 in the settings PATCH, checked by its
 * bytes (not by a declared type), at most LOGO_MAX_BYTES and LOGO_MAX_PIXELS on each side, stored
 * content-addressed in the blob store and served by the service at a stable URL.
 */
export const LOGO_MAX_BYTES = 256 * 1024;
export const LOGO_MAX_PIXELS = 1024;

export type LogoImage = { contentType: 'image/png' | 'image/jpeg'; width: number; height: number };

/** The stored logo as settings keep it; the URL is added when the settings are read. */
export type StoredLogo = { sha256: string; contentType: LogoImage['contentType']; width: number; height: number; byteSize: number };

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** The image's type and size when the bytes are a PNG or a JPEG with a readable header; else null. */
export function inspectLogo(bytes: Buffer): LogoImage | null {
  if (bytes.length >= 24 && bytes.subarray(0, 8).equals(PNG_SIGNATURE) && bytes.toString('latin1', 12, 16) === 'IHDR') {
    return { contentType: 'image/png', width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
  }
  if (bytes.length >= 4 && bytes[0] === 0xff && bytes[1] === 0xd8) {
    // Walk the JPEG's marker segments to its frame header (SOF0–SOF15 but DHT, JPG and DAC).
    let offset = 2;
    while (offset + 9 <= bytes.length) {
      if (bytes[offset] !== 0xff) return null;
      const marker = bytes[offset + 1]!;
      if (marker === 0xff) {
        offset += 1;
        continue;
      }
      const length = bytes.readUInt16BE(offset + 2);
      if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
        return { contentType: 'image/jpeg', height: bytes.readUInt16BE(offset + 5), width: bytes.readUInt16BE(offset + 7) };
      }
      if (marker === 0xda || length < 2) return null;
      offset += 2 + length;
    }
  }
  return null;
}

/** The file name ending of a logo's URL: browsers and mail clients like to see one. */
export function logoExtension(contentType: string): 'png' | 'jpg' {
  return contentType === 'image/png' ? 'png' : 'jpg';
}

/** The logo's stable URL: content-addressed, so it never changes meaning and may be cached for good. */
export function logoUrl(publicUrl: string, logo: Pick<StoredLogo, 'sha256' | 'contentType'>): string {
  return `${publicUrl}/branding/logos/${logo.sha256}.${logoExtension(logo.contentType)}`;
}
