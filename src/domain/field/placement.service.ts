import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { InvalidRequestError, ServerBusyError, type ValidationIssue } from '../../shared/errors.ts';
import { isUuid } from '../../shared/ids.ts';
import { ConcurrentModificationError } from '../../shared/normalize-error.ts';
import { Document } from '../document/document.entity.ts';
import { DocumentInspectionLimitExceededError, DocumentNotFoundError, DocumentTooComplexError, DocumentTooManyTagsError } from '../document/document.errors.ts';
import { ensureNothingSigned } from '../owner/correction.ts';
import { type FieldData, readFields } from '../owner/owner.read.ts';
import { type OwnerChange, recipientsIn } from '../owner/owner.ts';
import type { OwnerRef } from '../owner/owner-ref.ts';
import { contentOwner } from '../owner/owners.ts';
import type { FoundFormField } from '../pdf/form-fields.ts';
import { PdfInspectionError } from '../pdf/inspect/limits.ts';
import { type FoundTag, isDataTag } from '../pdf/text-tags.ts';
import { PdfWorkersBusyError, PdfWorkLimitError } from '../pdf/worker-pool.ts';
import type { ServiceContext } from '../service-context.ts';
import { formatPath, issuesFromZod } from '../validation.ts';
import { Field, type FieldType } from './field.entity.ts';
import { FieldNotAllowedForRecipientError } from './field.errors.ts';
import { addFieldsToOwner, shapeFields } from './field.service.ts';
import { DATE_FORMATS } from './field-rules.js';

/*
 * Fields placed from a document itself (docs/fields.md, "Placing fields from the PDF"), for an
 * envelope or a template alike: from its text tags (`{{sig;role=buyer}}`) or from its own form
 * (AcroForm). The PDF work (finding tags with pdf.js, reading the form, removing tag text and
 * imported form fields) runs in a PDF worker (pdf/text-tags.ts, pdf/form-fields.ts); the rules
 * here turn what it found into fields and add them with the field rules of field.service.ts, in
 * one change under the owner's lock: all of them and the document's new content, or nothing
 * (the PDF work itself runs outside the lock, see `placeFields`).
 */

/** Tags read from one document at most (docs/limits.md). */
export const MAX_TAGS_PER_DOCUMENT = 500;

const roleName = z.string().min(1, 'must not be empty').max(200, 'at most 200 characters');
const roleRecipient = z.string({ error: 'must be a recipient id' });

export const placeFieldsInput = z.strictObject({
  from: z.enum(['tags', 'acroform'], { error: 'must be "tags" or "acroform"' }),
  roles: z.record(roleName, roleRecipient).optional(),
  hideTags: z.boolean({ error: 'must be true or false' }).optional(),
});

/**
 * The `roles` mapping as a Map, read from the caller's own object. Role names are the caller's
 * strings and tags' text: looked up in a plain object, `constructor` or `toString` would find
 * Object.prototype's members, and zod's record drops a `__proto__` key without a word. So every
 * own key is checked here (the record's rules, `__proto__` included) and kept in a Map.
 */
function rolesOf(input: unknown): { roles: Map<string, string>; issues: ValidationIssue[] } {
  const roles = new Map<string, string>();
  const issues: ValidationIssue[] = [];
  const raw = typeof input === 'object' && input !== null ? (input as { roles?: unknown }).roles : undefined;
  if (typeof raw !== 'object' || raw === null) return { roles, issues };
  for (const [role, recipientId] of Object.entries(raw)) {
    const name = roleName.safeParse(role);
    const recipient = roleRecipient.safeParse(recipientId);
    if (!name.success) issues.push({ path: formatPath(['roles', role]), message: name.error.issues[0]?.message ?? 'not a role name' });
    else if (!recipient.success) issues.push({ path: formatPath(['roles', role]), message: 'must be a recipient id' });
    else roles.set(role, recipient.data);
  }
  return { roles, issues };
}

export type Unmatched = { tag: string; page: number; reason: string };
export type PlacedFields = { fields: FieldData[]; unmatched: Unmatched[] };

/** A Map, not an object: a tag's type is the document's text (`{{constructor;…}}` is an unknown type, not Object). */
const TAG_TYPES = new Map<string, FieldType>([
  ['sig', 'simple_signature'],
  ['simple_signature', 'simple_signature'],
  ['bio', 'biometric_signature'],
  ['biometric_signature', 'biometric_signature'],
  ['text', 'text'],
  ['check', 'checkbox'],
  ['checkbox', 'checkbox'],
  ['radio', 'radio'],
  ['choice', 'binary_choice'],
  ['binary_choice', 'binary_choice'],
  // Issue 32.
  ['init', 'initials'],
  ['initials', 'initials'],
  ['signed', 'date_signed'],
  ['date_signed', 'date_signed'],
  ['name', 'full_name'],
  ['full_name', 'full_name'],
  ['email', 'email'],
  ['date', 'date'],
  ['num', 'number'],
  ['number', 'number'],
  ['list', 'dropdown'],
  ['dropdown', 'dropdown'],
  ['file', 'attachment'],
  ['attachment', 'attachment'],
]);
const TAG_KEYS = new Set(['role', 'id', 'required', 'label', 'w', 'h', 'options', 'decimals', 'format', 'files']);
/** Which tag types take the keys only some types take (looked up only for keys in TAG_KEYS). */
const TYPED_TAG_KEYS = new Map<string, FieldType[]>([
  ['options', ['radio', 'dropdown']],
  ['decimals', ['number']],
  ['format', ['date', 'date_signed']],
  ['files', ['attachment']],
]);
const SIGNATURE_TYPES: FieldType[] = ['simple_signature', 'biometric_signature'];

type ParsedTag = {
  type: FieldType;
  role: string;
  id?: string;
  required?: boolean;
  label?: string;
  width?: number;
  height?: number;
  options?: string[];
  decimals?: number;
  format?: string;
  maxFiles?: number;
};

/** A tag's text (`{{TYPE;key=value;…}}`) read, or why it cannot be. */
export function parseTag(text: string): ParsedTag | { problem: string } {
  const [typeName, ...pairs] = text
    .slice(2, -2)
    .split(';')
    .map((part) => part.trim());
  const type = TAG_TYPES.get((typeName ?? '').toLowerCase());
  if (type === undefined) return { problem: `unknown field type "${typeName}"` };
  const parsed: Partial<ParsedTag> = { type };
  for (const pair of pairs) {
    if (pair === '') continue;
    const equals = pair.indexOf('=');
    const key = (equals < 0 ? pair : pair.slice(0, equals)).trim().toLowerCase();
    const value = equals < 0 ? '' : pair.slice(equals + 1).trim();
    if (!TAG_KEYS.has(key)) return { problem: `unknown key "${key}"` };
    if (value === '') return { problem: `"${key}" needs a value` };
    const only = TYPED_TAG_KEYS.get(key);
    if (only !== undefined && !only.includes(type)) return { problem: `"${key}" applies to ${only.join(' and ')} tags only` };
    if (key === 'role') parsed.role = value;
    else if (key === 'id') parsed.id = value;
    else if (key === 'label') {
      if ([...value].length > 200) return { problem: '"label" is longer than 200 characters' };
      parsed.label = value;
    } else if (key === 'options') parsed.options = value.split('|').map((option) => option.trim());
    else if (key === 'decimals') {
      if (!/^[0-6]$/.test(value)) return { problem: '"decimals" must be a whole number from 0 to 6' };
      parsed.decimals = Number(value);
    } else if (key === 'files') {
      // An attachment's maxFiles (docs/fields.md#attachment).
      if (!/^([1-9]|10)$/.test(value)) return { problem: '"files" must be a whole number from 1 to 10' };
      parsed.maxFiles = Number(value);
    } else if (key === 'format') {
      if (!DATE_FORMATS.includes(value)) return { problem: `"format" must be one of ${DATE_FORMATS.join(', ')}` };
      parsed.format = value;
    } else if (key === 'required') {
      if (value !== 'true' && value !== 'false') return { problem: '"required" must be true or false' };
      parsed.required = value === 'true';
    } else {
      const points = Number(value);
      if (!Number.isFinite(points) || points <= 0 || points > 5000) return { problem: `"${key}" must be a number of points` };
      if (key === 'w') parsed.width = points;
      else parsed.height = points;
    }
  }
  if (parsed.role === undefined) return { problem: 'no role' };
  return parsed as ParsedTag;
}

/** The config a tag gives its field: options (radio, dropdown), decimals (number), a date format, an attachment's file count. */
function tagConfig(read: ParsedTag): { config?: Record<string, unknown> } {
  const config: Record<string, unknown> = {};
  if (read.options !== undefined) config.options = read.options.map((option) => ({ value: option, label: option }));
  if (read.decimals !== undefined) config.decimals = read.decimals;
  if (read.format !== undefined) config.format = read.format;
  if (read.maxFiles !== undefined) config.maxFiles = read.maxFiles;
  return Object.keys(config).length === 0 ? {} : { config };
}

/** A unique identifier from a wish: kept when free, else a number appended. */
function uniqueIdentifier(wish: string, taken: Set<string>): string {
  let base =
    wish
      .replace(/[^A-Za-z0-9_.-]+/g, '-')
      .replace(/^[^A-Za-z0-9]+/, '')
      .slice(0, 56) || 'field';
  if (base.length === 0) base = 'field';
  let candidate = base;
  for (let number = 2; taken.has(candidate); number++) candidate = `${base}-${number}`;
  taken.add(candidate);
  return candidate;
}

/** A box kept on its page (a tag near an edge sized past it is shortened). */
function onPage(box: { x: number; y: number; width: number; height: number }, page: { width: number; height: number }) {
  const x = Math.min(Math.max(0, box.x), page.width - 1);
  const y = Math.min(Math.max(0, box.y), page.height - 1);
  return { location: { x, y }, size: { width: Math.max(1, Math.min(box.width, page.width - x)), height: Math.max(1, Math.min(box.height, page.height - y)) } };
}

/**
 * A tag's box sized by its `w` and `h`: `w` along the line from where the tag starts, `h` across it
 * from the top of its letters down, as the tag reads (on a page turned by 90°, `w` runs down the
 * screen). Without them, the tag's own box.
 */
function sizedBox(tag: FoundTag, read: ParsedTag): { x: number; y: number; width: number; height: number } {
  const { x, y, width, height } = tag.box;
  let [left, top, right, bottom] = [x, y, x + width, y + height];
  if (read.width !== undefined) {
    if (tag.frame.advance === 'x+') right = left + read.width;
    else if (tag.frame.advance === 'x-') left = right - read.width;
    else if (tag.frame.advance === 'y+') bottom = top + read.width;
    else top = bottom - read.width;
  }
  if (read.height !== undefined) {
    // The top of the letters is the side their up points to; the box grows away from it.
    if (tag.frame.up === 'y-') bottom = top + read.height;
    else if (tag.frame.up === 'y+') top = bottom - read.height;
    else if (tag.frame.up === 'x+') left = right - read.height;
    else right = left + read.height;
  }
  return { x: left, y: top, width: right - left, height: bottom - top };
}

/** Types whose value is drawn as a line of text: their boxes are sized for the text (fieldSize). */
const TEXT_DRAWN_TYPES = new Set<FieldType>(['text', 'date', 'date_signed', 'full_name', 'email', 'number', 'dropdown', 'attachment']);
/** The smallest size a text value is drawn at when its box is sized from a tag. */
const MIN_TAG_TEXT_POINTS = 8;
/** The renderer draws a one-line value at 0.7 of its box's height (at most 12 pt; render.ts, drawTextBox). */
const TEXT_SIZE_PER_BOX_HEIGHT = 0.7;

/**
 * The size a field made from a tag gets where the tag gives none (`w`, `h` always win). The tag's
 * own box is its line of text: as a text field's box it drew the value at 0.7 of the line (about
 * 7 pt in a 10 pt document), and a checkbox's was the whole tag, a tick floating in a wide box. So:
 * - a text field keeps the tag's width and is made tall enough to draw its value at the size of
 *   the tag's text (as displayed), at least MIN_TAG_TEXT_POINTS, never shorter than the line;
 * - a checkbox is a square at the tag's start, as tall as the tag's line (the box a person ticks
 *   sits where the tag begins, at the size of the text around it).
 * Along and across the line as the tag reads, like `w` and `h` (a turned page turns them).
 */
function fieldSize(tag: FoundTag, read: ParsedTag): ParsedTag {
  const across = tag.frame.up === 'y-' || tag.frame.up === 'y+' ? tag.box.height : tag.box.width;
  if (TEXT_DRAWN_TYPES.has(read.type) && read.height === undefined) {
    const textPoints = Math.max(MIN_TAG_TEXT_POINTS, tag.fontSize);
    return { ...read, height: Math.max(across, textPoints / TEXT_SIZE_PER_BOX_HEIGHT) };
  }
  if (read.type === 'checkbox' && read.width === undefined && read.height === undefined) return { ...read, width: across, height: across };
  return read;
}

type Candidate = { input: Record<string, unknown>; source: FoundTag | FoundFormField };

/**
 * Text along one of the page's edges (0°, 90°, 180°, 270° as displayed, within half a degree):
 * its box is an upright rectangle, as a field's is. A diagonal tag's upright box would cover text
 * beside it, so it is listed in `unmatched` rather than placed somewhere it was not.
 */
function runsAlongAnEdge(angle: number): boolean {
  const offset = angle % 90;
  return offset <= 0.5 || offset >= 89.5;
}

/** Who a tag's role (or a form field's name) names: the `roles` mapping first, then a recipient's own identifier. */
function recipientFor(name: string, roles: Map<string, Assignee>, byIdentifier: Map<string, Assignee>, prefixes: boolean): Assignee | undefined {
  if (!prefixes) return roles.get(name) ?? byIdentifier.get(name);
  const prefix = [...roles.keys()].filter((key) => key !== '*' && name.startsWith(key)).sort((a, b) => b.length - a.length)[0];
  return prefix !== undefined ? roles.get(prefix) : (roles.get('*') ?? byIdentifier.get(name.split(/[.:]/)[0] ?? name));
}

/** The PDF workers' refusals as the caller's errors (as an upload gets them). */
async function inPdfWorker<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof PdfWorkLimitError) throw new DocumentInspectionLimitExceededError(error.limit, error.value);
    if (error instanceof PdfInspectionError && error.reason === 'too_complex') throw DocumentTooComplexError.from(error, 'nothing was placed');
    if (error instanceof PdfWorkersBusyError) {
      throw new ServerBusyError('The service is working on too many documents right now; nothing was placed. Retry in a few seconds.', { reason: error.reason });
    }
    throw error;
  }
}

/** A recipient as placement needs it. */
type Assignee = { id: string; identifier: string };

/**
 * Places fields on one document of an owner from the document's text tags or its form, all or
 * nothing (one `field.added` event). Answers the created fields and what could not be placed.
 *
 * The PDF work (reading the tags or the form, writing the document without them) runs in a PDF
 * worker between two short changes under the owner's lock, not inside one: a large document
 * takes seconds, and holding the draft's lock (and a database connection) meanwhile would stall
 * every other edit of it. The first change reads what the placement is computed from (the
 * document, the recipients, the identifiers taken) and checks the caller may change the owner;
 * the second writes the fields and the new content, after checking the document is still the one
 * read (`Resource.Conflict` otherwise, safe to retry). The field rules run again there.
 */
export async function placeFields(context: ServiceContext, options: { owner: OwnerRef; documentId: string; input: unknown }): Promise<PlacedFields> {
  const parsed = placeFieldsInput.safeParse(options.input);
  if (!parsed.success) throw new InvalidRequestError(issuesFromZod(parsed.error));
  const { from, hideTags = false } = parsed.data;
  const { roles, issues: roleIssues } = rolesOf(options.input);
  if (roleIssues.length > 0) throw new InvalidRequestError(roleIssues);
  if (hideTags && from !== 'tags') throw new InvalidRequestError([{ path: 'hideTags', message: 'applies to from: "tags" only' }]);
  const owner = contentOwner(options.owner.kind);

  const snapshot = await owner.change(context, options.owner.id, async (change: OwnerChange) => {
    const { em } = change;
    const document = isUuid(options.documentId) ? await em.findOne(Document, { id: options.documentId, ...change.scope }) : null;
    if (!document) throw new DocumentNotFoundError(options.documentId, owner.kind);
    // Correcting a sent envelope: placing fields may rewrite the document (hidden tags).
    await ensureNothingSigned(change);
    const recipients = await em.find(owner.recipients.entity, recipientsIn(change.scope));
    const byId = new Map(recipients.map((recipient) => [recipient.id, recipient]));
    const issues: ValidationIssue[] = [];
    const mapped = new Map<string, Assignee>();
    for (const [role, recipientId] of roles) {
      const recipient = isUuid(recipientId) ? byId.get(recipientId) : undefined;
      if (!recipient) issues.push({ path: formatPath(['roles', role]), message: `must be the id of a recipient in this ${owner.kind}` });
      else if (recipient.type === 'viewer') issues.push({ path: formatPath(['roles', role]), message: 'names a viewer; viewers hold no fields' });
      else if (recipient.type === 'approver') throw new FieldNotAllowedForRecipientError({ recipientId: recipient.id, type: recipient.type, path: formatPath(['roles', role]) });
      else mapped.set(role, { id: recipient.id, identifier: recipient.identifier });
    }
    if (issues.length > 0) throw new InvalidRequestError(issues);
    const existing = await em.find(Field, change.scope, { fields: ['identifier'] });
    return {
      document: { id: document.id, contentSha256: document.contentSha256, pages: document.pages },
      mapped,
      byIdentifier: new Map(
        recipients
          .filter((recipient) => recipient.type !== 'viewer' && recipient.type !== 'approver')
          .map((recipient) => [recipient.identifier, { id: recipient.id, identifier: recipient.identifier }]),
      ),
      taken: new Set(existing.map((field) => field.identifier)),
    };
  });
  const { document, mapped, byIdentifier, taken } = snapshot;

  // The PDF work is the caller's team's: the fair queue serves each team's in turn (pdf/worker-pool.ts).
  const team = (await context.caller()).teamId;
  const source = await context.blobStore.localCopy(document.contentSha256);
  let found;
  try {
    found = await inPdfWorker(() => context.pdfWorkers.readPlacements({ path: source.path, from, maxTags: MAX_TAGS_PER_DOCUMENT }, { team }));
  } finally {
    source.release();
  }
  const candidates: Candidate[] = [];
  const unmatched: Unmatched[] = [];
  if (found.from === 'tags') {
    if (found.tooMany) throw new DocumentTooManyTagsError(MAX_TAGS_PER_DOCUMENT);
    for (const tag of found.tags) {
      // A data tag is filled from a jumpstart's data (jumpstart/data-merge.ts), not placed as a field.
      if (isDataTag(tag.text)) continue;
      const read = parseTag(tag.text);
      if ('problem' in read) {
        unmatched.push({ tag: tag.text, page: tag.page, reason: read.problem });
        continue;
      }
      if (!runsAlongAnEdge(tag.angle)) {
        unmatched.push({ tag: tag.text, page: tag.page, reason: `its text runs at ${tag.angle}°; a field is an upright box, so place this one by coordinates` });
        continue;
      }
      const recipient = recipientFor(read.role, mapped, byIdentifier, false);
      if (!recipient) {
        unmatched.push({ tag: tag.text, page: tag.page, reason: `no recipient "${read.role}" in this ${owner.kind}` });
        continue;
      }
      if ((read.type === 'radio' || read.type === 'dropdown') && (read.options === undefined || read.options.length < 2)) {
        unmatched.push({ tag: tag.text, page: tag.page, reason: `a ${read.type} tag needs options=A|B` });
        continue;
      }
      const page = document.pages[tag.page] ?? tag.pageSize;
      candidates.push({
        source: tag,
        input: {
          type: read.type,
          recipientId: recipient.id,
          identifier: uniqueIdentifier(read.id ?? `${read.type.replace('_', '-')}-${read.role}`, taken),
          ...(read.label !== undefined ? { label: read.label } : {}),
          required: read.required ?? SIGNATURE_TYPES.includes(read.type),
          ...tagConfig(read),
          views: [{ documentId: document.id, page: tag.page, ...onPage(sizedBox(tag, fieldSize(tag, read)), page) }],
        },
      });
    }
  } else {
    for (const formField of found.formFields) {
      const problem = formFieldProblem(formField);
      const recipient = problem === null ? recipientFor(formField.name, mapped, byIdentifier, true) : undefined;
      if (problem !== null || !recipient) {
        unmatched.push({ tag: formField.name, page: formField.widgets[0]?.page ?? 0, reason: problem ?? `no recipient for "${formField.name}" (map it in roles, by a prefix or "*")` });
        continue;
      }
      candidates.push({ source: formField, input: formFieldInput(formField, recipient, document, uniqueIdentifier(formField.name, taken)) });
    }
  }
  if (candidates.length === 0) return { fields: [], unmatched };

  // The document without the placed tags' text, or without the imported form fields: stored
  // before the change that names it (an object never named by a row is collected later; a row
  // never names a missing object).
  let replaced: { sha256: string; byteSize: number } | undefined;
  let notHidden: string[] = [];
  const placedTags = candidates.map((candidate) => candidate.source).filter((item): item is FoundTag => 'ranges' in item);
  const importedNames = candidates
    .map((candidate) => candidate.source)
    .filter((item): item is FoundFormField => 'widgets' in item)
    .map((item) => item.name);
  if ((found.from === 'tags' && hideTags) || found.from === 'acroform') {
    const directory = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'placement-'));
    const copy = await context.blobStore.localCopy(document.contentSha256);
    try {
      const outputPath = path.join(directory, 'out.pdf');
      const sources = found;
      const written = await inPdfWorker(() =>
        context.pdfWorkers.applyPlacements(
          {
            sourcePath: copy.path,
            outputPath,
            ...(sources.from === 'tags' ? { hideTags: { tags: placedTags, operatorCounts: sources.operatorCounts } } : { removeFormFields: importedNames }),
          },
          { team },
        ),
      );
      notHidden = written.notHidden;
      const staged = await context.blobStore.stage(fs.createReadStream(outputPath));
      replaced = await staged.commit();
    } finally {
      copy.release();
      await fs.promises.rm(directory, { recursive: true, force: true });
    }
  }
  for (const tag of notHidden) {
    const placed = placedTags.find((item) => item.text === tag);
    unmatched.push({ tag, page: placed?.page ?? 0, reason: 'placed, but its text could not be removed from the page' });
  }

  const fieldIds = await owner.change(context, options.owner.id, async (change: OwnerChange) => {
    const current = await change.em.findOne(Document, { id: document.id, ...change.scope });
    if (!current) throw new DocumentNotFoundError(document.id, owner.kind);
    if (current.contentSha256 !== document.contentSha256) throw new ConcurrentModificationError();
    await ensureNothingSigned(change);
    const created = await addFieldsToOwner(context, change, owner, {
      shaped: shapeFields(candidates.map((candidate) => candidate.input)),
      details: {
        documentId: document.id,
        placedFrom: from,
        unmatched: unmatched.length,
        ...(replaced ? { documentSha256: { before: document.contentSha256, after: replaced.sha256 } } : {}),
        ...(hideTags ? { tagsHidden: placedTags.length - notHidden.length } : {}),
      },
    });
    if (replaced) {
      current.contentSha256 = replaced.sha256;
      current.byteSize = replaced.byteSize;
      await change.em.flush();
    }
    return created.map(({ field }) => field.id);
  });
  const fields = await readFields(context, { owner: options.owner, fieldIds });
  const byId = new Map(fields.map((field) => [field.id, field]));
  return { fields: fieldIds.map((id) => byId.get(id)).filter((field): field is FieldData => field !== undefined), unmatched };
}

function formFieldProblem(formField: FoundFormField): string | null {
  if (formField.kind === 'other') return 'not a text, checkbox, radio group, choice (single selection) or signature field';
  if (formField.widgets.length === 0) return 'has no widget on a page';
  if (formField.kind === 'radio' && formField.options.length < 2) return 'a radio group needs at least two options';
  if (formField.kind === 'choice' && (formField.options.length < 2 || formField.options.length > 200)) return 'a choice field needs 2 to 200 options';
  if (formField.kind === 'choice' && new Set(formField.options).size !== formField.options.length) return 'a choice field needs options that differ';
  if (formField.kind === 'choice' && formField.options.some((option) => option.trim() === '' || [...option].length > 100)) return 'a choice field needs options of 1 to 100 characters';
  return null;
}

/** A form field as a field's input: its type, its widgets as views, its value as the prefill. */
function formFieldInput(formField: FoundFormField, recipient: Assignee, document: { id: string; pages: Document['pages'] }, identifier: string): Record<string, unknown> {
  const views = formField.widgets.map((widget) => {
    const page = document.pages[widget.page] ?? { width: Number.MAX_SAFE_INTEGER, height: Number.MAX_SAFE_INTEGER };
    return { documentId: document.id, page: widget.page, ...onPage(widget.box, page) };
  });
  const common = { recipientId: recipient.id, identifier, label: formField.name.slice(0, 200), required: formField.required, views };
  switch (formField.kind) {
    case 'text': {
      const text = typeof formField.value === 'string' && formField.value.length > 0 ? formField.value : null;
      return {
        ...common,
        type: 'text',
        config: { multiline: formField.multiline, ...(formField.maxLength !== null && formField.maxLength > 0 && formField.maxLength <= 10_000 ? { maxLength: formField.maxLength } : {}) },
        value: text === null ? null : { text },
        readonly: formField.readOnly && text !== null,
      };
    }
    case 'choice': {
      const selected = typeof formField.value === 'string' && formField.options.includes(formField.value) ? formField.value : null;
      return {
        ...common,
        type: 'dropdown',
        config: { options: formField.options.map((option) => ({ value: option, label: option })) },
        value: selected === null ? null : { selected },
        readonly: formField.readOnly && selected !== null,
      };
    }
    case 'checkbox':
      return { ...common, type: 'checkbox', value: formField.value === true ? { checked: true } : null, readonly: formField.readOnly && formField.value === true };
    case 'radio': {
      const selected = typeof formField.value === 'string' ? formField.value : null;
      return {
        ...common,
        type: 'radio',
        config: { options: formField.options.map((option) => ({ value: option, label: option })) },
        value: selected === null ? null : { selected },
        readonly: formField.readOnly && selected !== null,
      };
    }
    default:
      return { ...common, type: 'simple_signature', required: true };
  }
}
