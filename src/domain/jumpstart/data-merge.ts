import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { InvalidRequestError, ServerBusyError, type ValidationIssue } from '../../shared/errors.ts';
import { sortedKeysJson } from '../../shared/sorted-keys-json.ts';
import { Document } from '../document/document.entity.ts';
import { DocumentInspectionLimitExceededError, DocumentTooComplexError, DocumentTooManyTagsError } from '../document/document.errors.ts';
import { DATE_FORMATS, formatDate, formatNumber, isIsoDate } from '../field/field-rules.js';
import { MAX_TAGS_PER_DOCUMENT } from '../field/placement.service.ts';
import { PdfInspectionError } from '../pdf/inspect/limits.ts';
import type { MergeAlign, MergeDrawing } from '../pdf/merge-draw.ts';
import { type FoundTag, isDataTag } from '../pdf/text-tags.ts';
import { PdfWorkersBusyError, PdfWorkLimitError } from '../pdf/worker-pool.ts';
import type { ServiceContext } from '../service-context.ts';
import type { TeamCaller } from '../team/team-caller.ts';
import { findVisibleTemplate } from '../template/team-template.ts';
import { type DataTagProblem, TemplateDataTagsInvalidError } from '../template/template.errors.ts';

/*
 * Data merge (issue 36 item 2; README "Data merge", docs/fields.md "Data tags"): a template's
 * document may carry `{{data:PATH}}` tags; a jumpstart's (or a bulk-send row's) `data` fills them.
 * The values are drawn into a copy of the document where the tags stood and the tags' text is
 * removed (the PDF work in a PDF worker), the copy stored, and only then is the envelope made,
 * naming the copy: a refusal anywhere before leaves no row (a stored copy no row names is
 * collected with the other orphan blobs).
 */

/** What `data` may hold (docs/limits.md): checked before any PDF is read. */
export const MERGE_DATA_LIMITS = {
  /** `data` as JSON (UTF-8 bytes). */
  maxSerializedBytes: 256 * 1024,
  /** Values (texts, numbers, booleans, nulls, empty lists and objects) anywhere in it. */
  maxLeaves: 1_000,
  /** Characters of one text (or key). */
  maxStringChars: 10_000,
  /** Levels of nesting. */
  maxDepth: 32,
} as const;

/** Keys a data path never follows: they name an object's machinery, not data (and a lookup of them must never reach a prototype). */
const UNFOLLOWED_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

const isPlainObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/**
 * `data` as the input schemas take it: kept as the caller's own object (a schema that copies keys
 * into a new object would treat a `__proto__` key as the prototype's setter), checked by
 * `checkMergeData`.
 */
export const mergeDataSchema = z
  .unknown()
  .refine(isPlainObject, 'must be a JSON object')
  .meta({ description: 'Values for the template documents’ {{data:PATH}} tags (README "Data merge").' });
export const missingDataSchema = z.enum(['refuse', 'blank'], { error: 'must be "refuse" or "blank"' }).default('refuse');

/** `data` within MERGE_DATA_LIMITS, or the issues (at `prefix`) that say which bound it passes. */
export function mergeDataIssues(data: Record<string, unknown>, prefix = 'data'): ValidationIssue[] {
  let serialized: string;
  try {
    serialized = JSON.stringify(data);
  } catch {
    return [{ path: prefix, message: 'must be JSON' }];
  }
  if (Buffer.byteLength(serialized) > MERGE_DATA_LIMITS.maxSerializedBytes) {
    return [{ path: prefix, message: `must be at most ${MERGE_DATA_LIMITS.maxSerializedBytes} bytes as JSON` }];
  }
  let leaves = 0;
  const pending: { value: unknown; path: string; depth: number }[] = [{ value: data, path: prefix, depth: 0 }];
  while (pending.length > 0) {
    const { value, path: at, depth } = pending.pop()!;
    if (depth > MERGE_DATA_LIMITS.maxDepth) return [{ path: at, message: `nests more than ${MERGE_DATA_LIMITS.maxDepth} levels deep` }];
    if (typeof value === 'string') {
      if (value.length > MERGE_DATA_LIMITS.maxStringChars) return [{ path: at, message: `must be at most ${MERGE_DATA_LIMITS.maxStringChars} characters` }];
    }
    const children: [string, unknown][] = Array.isArray(value)
      ? value.map((item, index) => [`[${index}]`, item])
      : isPlainObject(value)
        ? Object.entries(value).map(([key, item]) => [`.${key}`, item])
        : [];
    if (children.length === 0) leaves += 1;
    if (leaves > MERGE_DATA_LIMITS.maxLeaves) return [{ path: prefix, message: `must hold at most ${MERGE_DATA_LIMITS.maxLeaves} values` }];
    for (const [step, child] of children) {
      if (step.length - 1 > MERGE_DATA_LIMITS.maxStringChars) return [{ path: at, message: `has a key longer than ${MERGE_DATA_LIMITS.maxStringChars} characters` }];
      pending.push({ value: child, path: `${at}${step}`, depth: depth + 1 });
    }
  }
  return [];
}

// ---------------------------------------------------------------------------------------------
// Tags

const NUMBER_FORMAT = /^number(?::([0-6]))?$/;
const MERGE_LOCALES = ['en-US', 'tr-TR'];

/** A data tag as read: its path (segments, the one marked `[]` a list), how to set its value. */
export type DataTag = { path: string; segments: { key: string; each: boolean }[]; size?: number; align: MergeAlign; format?: string; locale: string };

function parsePath(text: string): { key: string; each: boolean }[] | string {
  if (text === '' || text.length > 200) return 'its path must be 1 to 200 characters';
  const segments = text.split('.').map((part) => ({ key: part.endsWith('[]') ? part.slice(0, -2) : part, each: part.endsWith('[]') }));
  if (segments.length > MERGE_DATA_LIMITS.maxDepth) return `its path has more than ${MERGE_DATA_LIMITS.maxDepth} parts`;
  if (segments.some((segment) => segment.key === '' || /[\s[\]{}]/.test(segment.key))) return `"${text}" is not a path: names joined by dots, a list marked items[]`;
  if (segments.filter((segment) => segment.each).length > 1) return 'its path may go through one list ([]) at most';
  return segments;
}

/** Reads `{{data:PATH}}` or `{{data;path=PATH;size=PT;align=…;format=…;locale=…}}`. */
export function parseDataTag(text: string): DataTag | { problem: string } {
  const inner = text.slice(2, -2).trim();
  const colon = /^data\s*:/i.exec(inner);
  const pairs: [string, string][] = [];
  if (colon) pairs.push(['path', inner.slice(colon[0].length).trim()]);
  else {
    for (const part of inner.split(';').slice(1)) {
      if (part.trim() === '') continue;
      const equals = part.indexOf('=');
      pairs.push([(equals < 0 ? part : part.slice(0, equals)).trim().toLowerCase(), equals < 0 ? '' : part.slice(equals + 1).trim()]);
    }
  }
  const tag: Partial<DataTag> = { align: 'left', locale: 'en-US' };
  for (const [key, value] of pairs) {
    if (value === '') return { problem: `"${key}" needs a value` };
    if (key === 'path') {
      const segments = parsePath(value);
      if (typeof segments === 'string') return { problem: segments };
      tag.path = value;
      tag.segments = segments;
    } else if (key === 'size') {
      const size = Number(value);
      if (!/^[0-9]+(\.[0-9]+)?$/.test(value) || size < 8 || size > 72) return { problem: '"size" must be a number of points from 8 to 72' };
      tag.size = size;
    } else if (key === 'align') {
      if (value !== 'left' && value !== 'center' && value !== 'right') return { problem: '"align" must be left, center or right' };
      tag.align = value;
    } else if (key === 'format') {
      if (!DATE_FORMATS.includes(value) && !NUMBER_FORMAT.test(value)) return { problem: `"format" must be one of ${DATE_FORMATS.join(', ')}, number or number:N (N decimals, 0 to 6)` };
      tag.format = value;
    } else if (key === 'locale') {
      if (!MERGE_LOCALES.includes(value)) return { problem: `"locale" must be one of ${MERGE_LOCALES.join(', ')}` };
      tag.locale = value;
    } else return { problem: `unknown key "${key}"` };
  }
  if (tag.path === undefined) return { problem: 'needs a path: {{data:customer.name}} or {{data;path=customer.name}}' };
  return tag as DataTag;
}

/** An own property only: a lookup never reaches a prototype, whatever the key. */
function ownValue(container: unknown, key: string): { found: true; value: unknown } | { found: false } {
  if (UNFOLLOWED_KEYS.has(key) || !isPlainObject(container) || !Object.prototype.hasOwnProperty.call(container, key)) return { found: false };
  return { found: true, value: container[key] };
}

/** One value as text in the tag's format, or the problem with it. */
function textOf(value: unknown, tag: DataTag): string | { problem: string } {
  if (value === null) return '';
  const numberFormat = tag.format === undefined ? null : NUMBER_FORMAT.exec(tag.format);
  if (numberFormat) {
    // A CSV cell is text: a plain decimal written as text is the number it reads as.
    const number = typeof value === 'string' && /^\s*-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*$/.test(value) ? Number(value) : value;
    if (typeof number !== 'number' || !Number.isFinite(number)) return { problem: `must be a number (the tag formats it as ${tag.format})` };
    return formatNumber(number, { decimals: numberFormat[1] === undefined ? 0 : Number(numberFormat[1]) }, tag.locale);
  }
  if (tag.format !== undefined) {
    if (typeof value !== 'string' || !isIsoDate(value)) return { problem: `must be a date YYYY-MM-DD (the tag formats it as ${tag.format})` };
    return formatDate(value, tag.format, tag.locale);
  }
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return { problem: 'is an object; a tag takes a text, a number, a boolean or a list of them' };
}

/** What a tag resolves to in `data`: its lines, or the missing paths and the problems (issue paths `data.…`). */
export function resolveDataTag(data: Record<string, unknown>, tag: DataTag): { lines: string[]; missing: string[]; problems: ValidationIssue[] } {
  const missing: string[] = [];
  const problems: ValidationIssue[] = [];
  const lines: string[] = [];
  const walk = (value: unknown, from: number, at: string) => {
    let current = value;
    for (let index = from; index < tag.segments.length; index++) {
      const segment = tag.segments[index]!;
      const step = ownValue(current, segment.key);
      const here = `${at}.${segment.key}`;
      if (!step.found) {
        missing.push(
          `${here}${segment.each ? '[]' : ''}${tag.segments
            .slice(index + 1)
            .map((rest) => `.${rest.key}${rest.each ? '[]' : ''}`)
            .join('')}`,
        );
        return;
      }
      if (segment.each) {
        if (!Array.isArray(step.value)) {
          problems.push({ path: here, message: 'must be a list (the tag reads it as one)' });
          return;
        }
        step.value.forEach((item, position) => walk(item, index + 1, `${here}[${position}]`));
        return;
      }
      current = step.value;
      at = here;
    }
    for (const item of Array.isArray(current) ? current : [current]) {
      const text = textOf(item, tag);
      if (typeof text === 'string') lines.push(...text.split(/\r\n|[\n\r\u2028\u2029]/));
      else problems.push({ path: at, message: text.problem });
    }
  };
  walk(data, 0, 'data');
  return { lines, missing, problems };
}

export function dataSha256(data: Record<string, unknown>): string {
  return createHash('sha256').update(sortedKeysJson(data)).digest('hex');
}

// ---------------------------------------------------------------------------------------------
// The template's tags, and merging

type FoundDataTag = { found: FoundTag; tag: DataTag };
export type DocumentTags = { documentId: string; contentSha256: string; operatorCounts: number[]; tags: FoundDataTag[] };

/**
 * The data tags of a stored document, by its content hash: what a content hash holds never
 * changes, and every jumpstart of a template reads the same few documents. Bounded (oldest out).
 */
const scanned = new Map<string, { operatorCounts: number[]; tags: FoundTag[] }>();
const SCANNED_KEPT = 200;

/** The PDF workers' refusals as the caller's errors (as an upload gets them). */
async function inPdfWorker<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof PdfWorkLimitError) throw new DocumentInspectionLimitExceededError(error.limit, error.value);
    if (error instanceof PdfInspectionError && error.reason === 'too_complex') throw DocumentTooComplexError.from(error, 'nothing was made');
    if (error instanceof PdfWorkersBusyError)
      throw new ServerBusyError('The service is working on too many documents right now; nothing was made. Retry in a few seconds.', { reason: error.reason });
    throw error;
  }
}

async function tagsOf(context: Pick<ServiceContext, 'blobStore' | 'pdfWorkers'>, team: string, contentSha256: string): Promise<{ operatorCounts: number[]; tags: FoundTag[] }> {
  const known = scanned.get(contentSha256);
  if (known) return known;
  const source = await context.blobStore.localCopy(contentSha256);
  let found;
  try {
    found = await inPdfWorker(() => context.pdfWorkers.readPlacements({ path: source.path, from: 'tags', maxTags: MAX_TAGS_PER_DOCUMENT }, { team }));
  } finally {
    source.release();
  }
  if (found.from !== 'tags') throw new Error('read-placements answered form fields for tags');
  if (found.tooMany) throw new DocumentTooManyTagsError(MAX_TAGS_PER_DOCUMENT);
  const result = { operatorCounts: found.operatorCounts, tags: found.tags.filter((tag) => isDataTag(tag.text)) };
  if (scanned.size >= SCANNED_KEPT) scanned.delete(scanned.keys().next().value!);
  scanned.set(contentSha256, result);
  return result;
}

/** The data tags of a template's documents, each read and checked; a tag that cannot be merged refuses the whole (`Template.DataTagsInvalid`). */
export async function templateDataTags(context: Pick<ServiceContext, 'blobStore' | 'pdfWorkers'>, em: EntityManager, caller: TeamCaller, templateId: string): Promise<DocumentTags[]> {
  const template = await findVisibleTemplate(em, caller, templateId);
  const documents = await em.find(Document, { template }, { orderBy: { order: 'asc', createdAt: 'asc', id: 'asc' } });
  const result: DocumentTags[] = [];
  const problems: DataTagProblem[] = [];
  for (const document of documents) {
    const { operatorCounts, tags } = await tagsOf(context, caller.teamId, document.contentSha256);
    const read: FoundDataTag[] = [];
    for (const found of tags) {
      const tag = parseDataTag(found.text);
      if ('problem' in tag) problems.push({ documentId: document.id, tag: found.text, page: found.page, reason: tag.problem });
      else if (found.ranges.length === 0) problems.push({ documentId: document.id, tag: found.text, page: found.page, reason: 'it lies in a form XObject, whose text cannot be removed' });
      else if (found.angle !== 0)
        problems.push({ documentId: document.id, tag: found.text, page: found.page, reason: `its text runs at ${found.angle}°; a data tag must read left to right as the page is shown` });
      else read.push({ found, tag });
    }
    if (read.length > 0) result.push({ documentId: document.id, contentSha256: document.contentSha256, operatorCounts, tags: read });
  }
  if (problems.length > 0) throw new TemplateDataTagsInvalidError(templateId, problems);
  return result;
}

/** A template document as merged: the stored copy that replaces it in the new envelope. */
export type MergedDocument = { templateDocumentId: string; sha256Before: string; sha256After: string; byteSize: number; tags: number };
export type DataMerge = { dataSha256: string; documents: Map<string, MergedDocument> };

export type MergeRequest = { data?: Record<string, unknown>; missingData: 'refuse' | 'blank' };

/** The issues of one `data` against a template's tags (every missing path unless `blank`, every value problem), and what each document would draw. */
export function planMerge(
  documents: DocumentTags[],
  data: Record<string, unknown>,
  missingData: 'refuse' | 'blank',
  prefix = '',
): { issues: ValidationIssue[]; planned: { document: DocumentTags; drawings: MergeDrawing[] }[] } {
  const issues: ValidationIssue[] = [];
  const missing = new Set<string>();
  const planned: { document: DocumentTags; drawings: MergeDrawing[] }[] = [];
  for (const document of documents) {
    const drawings: MergeDrawing[] = [];
    for (const { found, tag } of document.tags) {
      const resolved = resolveDataTag(data, tag);
      for (const path of resolved.missing) missing.add(path);
      issues.push(...resolved.problems.map((problem) => ({ ...problem, path: `${prefix}${problem.path}` })));
      drawings.push({ page: found.page, box: found.box, fontSize: found.fontSize, ...(tag.size !== undefined ? { size: tag.size } : {}), align: tag.align, lines: resolved.lines });
    }
    planned.push({ document, drawings });
  }
  if (missingData === 'refuse') {
    for (const path of missing) issues.push({ path: `${prefix}${path}`, message: 'is missing: a data tag of the template reads it (or send missingData: "blank")' });
  }
  return { issues, planned };
}

/** What merging needs of a service context (a request's, or a bulk send job's). */
export type MergeContext = Pick<ServiceContext, 'em' | 'blobStore' | 'pdfWorkers'>;

/**
 * Everything a jumpstart's `data` does before the envelope is made: bounds, the template's tags,
 * every missing path and value problem listed at once (`Request.Invalid`, unless `missingData` is
 * `blank`), then each document with tags merged in a PDF worker and stored. `draw: false` (a dry
 * run) checks and stores nothing. Answers undefined when there is nothing to merge and no data.
 */
export async function mergeTemplateData(
  context: MergeContext,
  template: { caller: TeamCaller; templateId: string },
  request: MergeRequest,
  options: { draw: boolean } = { draw: true },
): Promise<DataMerge | undefined> {
  const { caller, templateId } = template;
  const data = request.data ?? {};
  const bounds = mergeDataIssues(data, 'data');
  if (bounds.length > 0) throw new InvalidRequestError(bounds);
  const documents = await templateDataTags(context, context.em.fork(), caller, templateId);
  if (documents.length === 0 && request.data === undefined) return undefined;
  const { issues, planned } = planMerge(documents, data, request.missingData);
  if (issues.length > 0) throw new InvalidRequestError(issues, 'The data does not fill the template’s data tags; see context.issues for every missing path and problem. Nothing was made.');

  const merged = new Map<string, MergedDocument>();
  if (options.draw) {
    for (const { document, drawings } of planned) {
      const directory = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'merge-'));
      const copy = await context.blobStore.localCopy(document.contentSha256);
      try {
        const outputPath = path.join(directory, 'merged.pdf');
        const written = await inPdfWorker(() =>
          context.pdfWorkers.applyPlacements(
            { sourcePath: copy.path, outputPath, hideTags: { tags: document.tags.map((tag) => tag.found), operatorCounts: document.operatorCounts }, drawValues: drawings },
            { team: caller.teamId },
          ),
        );
        if (written.notHidden.length > 0) {
          throw new TemplateDataTagsInvalidError(
            templateId,
            written.notHidden.map((text) => ({
              documentId: document.documentId,
              tag: text,
              page: document.tags.find((tag) => tag.found.text === text)?.found.page ?? 0,
              reason: 'its text could not be removed from the page',
            })),
          );
        }
        const stored = await (await context.blobStore.stage(fs.createReadStream(outputPath))).commit();
        merged.set(document.documentId, {
          templateDocumentId: document.documentId,
          sha256Before: document.contentSha256,
          sha256After: stored.sha256,
          byteSize: stored.byteSize,
          tags: drawings.length,
        });
      } finally {
        copy.release();
        await fs.promises.rm(directory, { recursive: true, force: true });
      }
    }
  }
  return { dataSha256: dataSha256(data), documents: merged };
}
