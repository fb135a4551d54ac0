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
