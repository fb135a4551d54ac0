import fontkit from '@pdf-lib/fontkit';
import fs from 'node:fs';
import { sfntOfWoff } from '../src/domain/pdf/fonts.ts';
const DEFAULT = new Set(['ccmp', 'locl', 'rlig', 'calt', 'clig', 'liga', 'rclt']);
for (const f of ['noto-sans/files/noto-sans-latin-400-normal.woff','noto-sans/files/noto-sans-latin-ext-400-normal.woff','dancing-script/files/dancing-script-latin-400-normal.woff']) {
  const font: any = fontkit.create(sfntOfWoff(fs.readFileSync('node_modules/@fontsource/'+f)));
  const g = font.GSUB;
  const lookups = g.lookupList.toArray();
  const rev = new Map<number, string>();
  for (const cp of font.characterSet) { const id = font.glyphForCodePoint(cp).id; rev.set(id, (rev.get(id) ?? '') + String.fromCodePoint(cp)); }
  const used = new Set<number>();
  for (const r of g.featureList) if (DEFAULT.has(r.tag)) for (const i of r.feature.lookupListIndexes) used.add(i);
  console.log(f, 'used lookups', [...used]);
  for (const i of used) {
    const l = lookups[i];
    const subs = l.subTables.toArray ? l.subTables.toArray() : l.subTables;
    for (const s of subs) {
      const cov = s.coverage ?? s.inputCoverage?.[0] ?? s.coverages?.[0];
      const glyphs = cov ? (cov.version === 1 ? cov.glyphs : cov.rangeRecords.flatMap((r: any) => Array.from({ length: r.end - r.start + 1 }, (_, k) => r.start + k))) : 'NONE';
      const chars = Array.isArray(glyphs) ? glyphs.map((id: number) => rev.get(id) ?? `#${id}`).join(' ') : glyphs;
      console.log('  lookup', i, 'type', l.lookupType, 'fmt', s.version ?? s.format, 'keys', Object.keys(s).join('/'), 'covers', JSON.stringify(chars).slice(0, 200));
    }
  }
}
{
  const font: any = fontkit.create(sfntOfWoff(fs.readFileSync('node_modules/@fontsource/noto-sans/files/noto-sans-latin-400-normal.woff')));
  const l = font.GSUB.lookupList.toArray()[13];
  console.log('flags', l.flags, 'subTables type', l.subTables.constructor.name);
  const s = l.subTables.toArray ? l.subTables.toArray()[0] : l.subTables[0];
  console.log('ligatureSets', s.ligatureSets.constructor.name, JSON.stringify(s.ligatureSets.toArray ? s.ligatureSets.toArray() : s.ligatureSets));
  console.log('f i l ids', font.glyphForCodePoint(0x66).id, font.glyphForCodePoint(0x69).id, font.glyphForCodePoint(0x6c).id);
  console.log(font.GSUB.featureList[0]);
}
