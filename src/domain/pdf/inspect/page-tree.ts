/** The page tree: every page's size and rotation, with inherited attributes and bounded depth and count. */
import { dictionaryValue, isDictionary, isName, isReference, type PdfDictionary, type PdfValue } from './lexer.ts';
import { invalid, MAX_PAGE_TREE_NODES, MAX_PAGES, type PdfPage } from './limits.ts';
import { type ObjectReader, resolve } from './objects.ts';

// ---------------------------------------------------------------------------------------------
// Page tree
// ---------------------------------------------------------------------------------------------

type PageBox = [number, number, number, number];

/** The inheritable page attributes we report on (and the resources, to follow what a page paints), as they stand at one node of the tree. */
type InheritedPageAttributes = { mediaBox?: PageBox; cropBox?: PageBox; rotation?: number; resources?: PdfValue };

/** What a page runs: its /Contents (a stream or an array of them) with the resources its names are looked up in. */
export type PageContent = { contents: PdfValue; resources: PdfValue };

type PendingPageTreeNode = { reference: PdfValue; inherited: InheritedPageAttributes };

/**
 * Walks the tree depth-first in document order with an explicit stack, so a deep tree cannot
 * overflow the call stack. /Count is ignored: the leaves found are the truth.
 */
export async function collectPages(reader: ObjectReader, pagesRoot: PdfValue, contents: PageContent[]): Promise<PdfPage[]> {
  const pages: PdfPage[] = [];
  const visited = new Set<number>();
  const pending: PendingPageTreeNode[] = [{ reference: pagesRoot, inherited: {} }];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const { reference, inherited } = next;
    if (!isReference(reference)) invalid('page tree nodes must be indirect objects');
    if (visited.has(reference.objectNumber)) invalid(`the page tree reaches object ${reference.objectNumber} twice`);
    visited.add(reference.objectNumber);
    if (visited.size > MAX_PAGE_TREE_NODES) invalid('the page tree has too many nodes');
    const node = await resolve(reader, reference);
    if (!isDictionary(node)) invalid(`page tree node ${reference.objectNumber} is not a dictionary`);
    const attributes = await inheritPageAttributes(reader, node, inherited);
    if (pageTreeNodeKind(node, reference.objectNumber) === 'Pages') {
      const kids = await resolve(reader, dictionaryValue(node, 'Kids'));
      if (!Array.isArray(kids)) invalid(`page tree node ${reference.objectNumber} has no /Kids array`);
      for (let index = kids.length - 1; index >= 0; index--) pending.push({ reference: kids[index], inherited: attributes });
    } else {
      pages.push(measurePage(attributes, reference.objectNumber));
      contents.push({ contents: dictionaryValue(node, 'Contents'), resources: attributes.resources ?? null });
      if (pages.length > MAX_PAGES) invalid(`the document has more than ${MAX_PAGES} pages`);
    }
  }
  return pages;
}

/** Some writers omit /Type in the page tree; /Kids then tells an inner node from a page. */
function pageTreeNodeKind(node: PdfDictionary, objectNumber: number): 'Pages' | 'Page' {
  const type = dictionaryValue(node, 'Type');
  if (isName(type, 'Pages') || isName(type, 'Page')) return type.value as 'Pages' | 'Page';
  if (type !== null) invalid(`page tree node ${objectNumber} has an unexpected /Type`);
  return node.entries.has('Kids') ? 'Pages' : 'Page';
}

async function inheritPageAttributes(reader: ObjectReader, node: PdfDictionary, inherited: InheritedPageAttributes): Promise<InheritedPageAttributes> {
  return {
    mediaBox: (await readPageBox(reader, node, 'MediaBox')) ?? inherited.mediaBox,
    cropBox: (await readPageBox(reader, node, 'CropBox')) ?? inherited.cropBox,
    rotation: (await readRotation(reader, node)) ?? inherited.rotation,
    // Kept unresolved: only pages that paint something look into them.
    resources: node.entries.get('Resources') ?? inherited.resources,
  };
}

async function readPageBox(reader: ObjectReader, node: PdfDictionary, key: string): Promise<PageBox | undefined> {
  const value = await resolve(reader, dictionaryValue(node, key));
  if (value === null) return undefined;
  if (!Array.isArray(value) || value.length !== 4) return invalid(`/${key} must be an array of four numbers`);
  const box: number[] = [];
  for (const item of value) {
    const coordinate = await resolve(reader, item);
    if (typeof coordinate !== 'number') invalid(`/${key} must be an array of four numbers`);
    box.push(coordinate);
  }
  return box as PageBox;
}

async function readRotation(reader: ObjectReader, node: PdfDictionary): Promise<number | undefined> {
  const value = await resolve(reader, dictionaryValue(node, 'Rotate'));
  if (value === null) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value % 90 !== 0) invalid('/Rotate must be a multiple of 90');
  return ((value % 360) + 360) % 360;
}

function measurePage(attributes: InheritedPageAttributes, objectNumber: number): PdfPage {
  if (!attributes.mediaBox) invalid(`page ${objectNumber} has no /MediaBox, neither its own nor inherited`);
  // ISO 32000 §14.11.2: the CropBox is intersected with the MediaBox; one that misses it
  // entirely is ignored (what viewers, and the renderer, show is then the MediaBox).
  const normal = ([x1, y1, x2, y2]: PageBox) => [Math.min(x1, x2), Math.min(y1, y2), Math.max(x1, x2), Math.max(y1, y2)] as const;
  const media = normal(attributes.mediaBox);
  let [left, bottom, right, top] = media;
  if (attributes.cropBox) {
    const crop = normal(attributes.cropBox);
    const clipped = [Math.max(media[0], crop[0]), Math.max(media[1], crop[1]), Math.min(media[2], crop[2]), Math.min(media[3], crop[3])] as const;
    if (clipped[2] > clipped[0] && clipped[3] > clipped[1]) [left, bottom, right, top] = clipped;
  }
  const width = roundToHundredths(right - left);
  const height = roundToHundredths(top - bottom);
  if (width === 0 || height === 0) invalid(`page ${objectNumber} has an empty page box`);
  const rotation = attributes.rotation ?? 0;
  // Sizes are reported as displayed: a quarter turn puts the long side the other way.
  const quarterTurn = rotation === 90 || rotation === 270;
  return quarterTurn ? { width: height, height: width, rotation } : { width, height, rotation };
}

function roundToHundredths(value: number): number {
  return Math.round(value * 100) / 100;
}
