/** File names inside the ZIP: the document's name made safe for every file system, with `.pdf`, unique. */
export function safeFileNames(names: string[]): string[] {
  const used = new Set<string>();
  return names.map((name) => {
    let base = name
      .normalize('NFC')
      .replace(/[\u0000-\u001f\u007f/\\:*?"<>|]/g, '_')
      .replace(/^[\s.]+|[\s.]+$/g, '')
      .slice(0, 120);
    if (base === '') base = 'document';
    base = base.replace(/\.pdf$/i, '');
    let candidate = `${base}.pdf`;
    for (let copy = 2; used.has(candidate.toLowerCase()); copy++) candidate = `${base} (${copy}).pdf`;
    used.add(candidate.toLowerCase());
    return candidate;
  });
}

const EXTENSIONS: Record<string, string> = { 'application/pdf': 'pdf', 'image/png': 'png', 'image/jpeg': 'jpg' };

/**
 * Names of signers' attachments inside the ZIP's `attachments/` folder: the uploaded name made
 * safe as above, ending in the extension of the type its bytes are (a PDF named `photo.png`
 * becomes `photo.png.pdf`), unique.
 */
export function safeAttachmentNames(files: { name: string; contentType: string }[]): string[] {
  const used = new Set<string>();
  return files.map((file) => {
    const extension = EXTENSIONS[file.contentType] ?? 'bin';
    let base = file.name
      .normalize('NFC')
      .replace(/[\u0000-\u001f\u007f/\\:*?"<>|]/g, '_')
      .replace(/^[\s.]+|[\s.]+$/g, '')
      .slice(0, 120);
    if (base === '') base = 'attachment';
    const suffix = new RegExp(`\\.${extension === 'jpg' ? '(jpg|jpeg)' : extension}$`, 'i');
    base = base.replace(suffix, '');
    let candidate = `${base}.${extension}`;
    for (let copy = 2; used.has(candidate.toLowerCase()); copy++) candidate = `${base} (${copy}).${extension}`;
    used.add(candidate.toLowerCase());
    return candidate;
  });
}
