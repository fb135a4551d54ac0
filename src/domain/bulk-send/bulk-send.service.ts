import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { DomainError, InvalidRequestError, MAX_LISTED_ITEMS, PayloadTooLargeError, type ValidationIssue } from '../../shared/errors.ts';
import { newId } from '../../shared/ids.ts';
import { appendAuditEvent } from '../audit/audit.service.ts';
import { apiKeyActor } from '../change.ts';
import { envelopeSettings } from '../envelope/envelope.service.ts';
import type { FieldType } from '../field/field.entity.ts';
import { parseFieldValue } from '../field/field-values.ts';
import { answerOf, runIdempotently } from '../idempotency/idempotency.service.ts';
import { type DocumentTags, MERGE_DATA_LIMITS, mergeDataIssues, mergeDataSchema, missingDataSchema, planMerge, templateDataTags } from '../jumpstart/data-merge.ts';
import { type JumpstartEntry, loadTemplateContent, matchEntries, readinessIssues, type TemplateContent } from '../jumpstart/jumpstart.service.ts';
import { enqueue } from '../outbox/outbox.ts';
import { OUTBOX_TOPICS } from '../outbox/topics.ts';
import { agentsSchema, resolveAgentInputs } from '../recipient/agent-input.ts';
import type { ServiceContext } from '../service-context.ts';
import type { TeamCaller } from '../team/team-caller.ts';
import { queueTeamNotice } from '../team/team-notices.ts';
import { findVisibleTemplate } from '../template/team-template.ts';
import { TemplateNotReadyError } from '../template/template.errors.ts';
import { isStorableText, issuesFromZod, parseInput } from '../validation.ts';
import { BulkSend } from './bulk-send.entity.ts';
import { BulkSendFinishedError, BulkSendInvalidRowsError, BulkSendTooManyRowsError, type InvalidRow } from './bulk-send.errors.ts';
import { CsvSyntaxError, type CsvTable, CsvTooManyRecordsError, parseCsvTable } from './csv.ts';
import { findTeamBulkSend } from './team-bulk-send.ts';

/*
 * Bulk send (issue 22): one template sent to many people, one envelope per row. The request is
 * validated whole (every row against the template, every problem of every row reported at once)
 * and then only recorded: the bulk send, its rows, and the first step of its job, in one
 * transaction. The job (bulk-send.job.ts) makes and sends the envelopes, a few rows per step.
 */

/** Rows one bulk send takes (docs/limits.md). */
export const MAX_BULK_SEND_ROWS = 1_000;

/** The largest CSV file a bulk send takes: 1,000 rows of a few people each fit easily. */
export const MAX_BULK_SEND_CSV_BYTES = 2 * 1024 * 1024;

/**
 * What a bulk send's CSV file may hold, each checked while it is read (csv.ts; docs/limits.md):
 * columns for every person key of 50 roles, the envelope's name and 1,000 fields; a field as long
 * as the longest text value (10,000 characters); the header, 1,000 rows and 100 blank lines.
 */
export const BULK_SEND_CSV_LIMITS = {
  maxColumns: 1_250,
  maxFieldChars: 10_000,
  maxRecordChars: 100_000,
  maxRecords: MAX_BULK_SEND_ROWS + 1 + 100,
} as const;

/** Rows checked between two turns of the event loop: a thousand rows of many values are seconds of work. */
const ROWS_PER_TURN = 25;

/** Rows recorded per statement. */
const ROWS_PER_INSERT = 100;

const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

const rowRecipient = z.strictObject({
  identifier: z.string({ error: 'must be a role identifier of the template' }),
  agents: agentsSchema.default([]),
});

export const bulkSendRowInput = z.strictObject({
  recipients: z.array(rowRecipient).max(50, 'at most 50 entries, one per role of the template').default([]),
  name: envelopeSettings.name.optional(),
  context: envelopeSettings.context.optional(),
  values: z.record(z.string(), z.unknown(), { error: 'must be an object of field identifier → value' }).optional(),
  /** Values for the template's data tags, as a jumpstart's `data` (README "Data merge"). */
  data: mergeDataSchema.optional(),
});

type BulkSendRowInput = z.output<typeof bulkSendRowInput>;

const bulkSendSettings = {
  name: z
    .string({ error: 'must be text' })
    .trim()
    .min(1, 'must not be empty')
    .max(200, 'must be at most 200 characters')
    // PostgreSQL cannot store U+0000, and a lone surrogate is not text: refused here, not a 500 there.
    .refine((value) => isStorableText(value) && !/[\u0000-\u001f\u007f]/.test(value), 'must not contain control characters or broken Unicode')
    .optional(),
  skipInvalidRows: z.boolean({ error: 'must be true or false' }).default(false),
  /** Every row's: `refuse` (default) a row whose data lacks a tag's path is invalid; `blank` leaves it blank. */
  missingData: missingDataSchema,
};

/** The JSON body: rows are checked one by one (bulkSendRowInput), so every row's problems are listed. */
export const createBulkSendInput = z.strictObject({
  ...bulkSendSettings,
  rows: z.array(bulkSendRowInput).min(1, 'must have at least one row'),
});

/** The JSON body as first read: its rows are then checked one by one, each against the template. */
const bulkSendBody = z.strictObject({ ...bulkSendSettings, rows: z.array(z.unknown(), { error: 'must be a list of rows' }).min(1, 'must have at least one row') });

/** The multipart form's text fields beside the `csv` file. */
export const createBulkSendCsvFields = z.strictObject({
  name: bulkSendSettings.name,
  skipInvalidRows: z.enum(['true', 'false'], { error: 'must be true or false' }).optional(),
  missingData: z.enum(['refuse', 'blank'], { error: 'must be "refuse" or "blank"' }).optional(),
});

/** A row as the job takes it: the jumpstart's entries and the prefilled values, checked. */
export type StoredRow = {
  recipients: JumpstartEntry[];
  name?: string;
  context?: Record<string, unknown>;
  values?: Record<string, Record<string, unknown>>;
  /** The row's data for the template's data tags, checked against them; merged by the job before its envelope is made. */
  data?: Record<string, unknown>;
  missingData?: 'refuse' | 'blank';
};

/** What a row's data is checked against: the template's data tags, and the bulk send's missingData. */
type MergeCheck = { documents: DocumentTags[]; missingData: 'refuse' | 'blank' };

/** A row as checked: its issues are the first MAX_LISTED_ITEMS, `issuesOmitted` counts the rest. */
type CheckedRow = { index: number; line?: number; raw: unknown; stored?: StoredRow; issues: ValidationIssue[]; issuesOmitted: number };

/**
 * A row's problems: the first MAX_LISTED_ITEMS kept, the rest only counted (a row of 1,250 CSV
 * columns can have one per column). A class: one is made per row, and getters in a per-row object
 * literal would cost a hidden class per row (scripts/check-accessors.ts).
 */
class IssueCollector {
  readonly issues: ValidationIssue[] = [];
  #omitted = 0;
  add(...found: ValidationIssue[]): void {
    for (const issue of found) {
      if (this.issues.length < MAX_LISTED_ITEMS) this.issues.push(issue);
      else this.#omitted += 1;
    }
  }
  get omitted(): number {
    return this.#omitted;
  }
  get count(): number {
    return this.issues.length + this.#omitted;
  }
}

/** Paths of the keys and texts in a row that PostgreSQL cannot store (U+0000, lone surrogates), at most `limit`. */
function unstorableTextPaths(value: unknown, limit: number): string[] {
  const found: string[] = [];
  const pending: { value: unknown; path: string }[] = [{ value, path: '' }];
  while (pending.length > 0 && found.length < limit) {
    const { value: current, path } = pending.pop()!;
    if (typeof current === 'string') {
      if (!isStorableText(current)) found.push(path);
    } else if (Array.isArray(current)) {
      for (let index = current.length - 1; index >= 0; index -= 1) pending.push({ value: current[index], path: `${path}[${index}]` });
    } else if (current !== null && typeof current === 'object') {
      const entries = Object.entries(current);
      for (let index = entries.length - 1; index >= 0; index -= 1) {
        const [key, child] = entries[index]!;
        const childPath = path === '' ? key : `${path}.${key}`;
        if (!isStorableText(key)) found.push(childPath);
        else pending.push({ value: child, path: childPath });
      }
    }
  }
  return found.slice(0, limit);
}

const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * A copy PostgreSQL's jsonb can store: U+0000 and lone surrogates in keys and texts become U+FFFD.
 * For what is kept of a refused row (its input and problems, which may quote the input), never
 * for anything sent.
 */
function storableCopy(value: unknown): unknown {
  if (typeof value === 'string') return value.replace(UNSTORABLE, '\ufffd');
  if (Array.isArray(value)) return value.map(storableCopy);
  if (value !== null && typeof value === 'object') {
    const copy: Record<string, unknown> = {};
    for (const [key, child] of Object.entries(value))
      Object.defineProperty(copy, key.replace(UNSTORABLE, '\ufffd'), { value: storableCopy(child), enumerable: true, writable: true, configurable: true });
    return copy;
  }
  return value;
}

const SIGNATURE_TYPES: readonly FieldType[] = ['simple_signature', 'biometric_signature'];

/**
 * One row against the template: its shape, the roles it names (each at most once, each known),
 * a person for every role (from the row, or the role's pre-assigned person), and its values
 * (fields of the template, each valid for the field's type and config; signatures are the
 * signer's own and cannot be prefilled). References to contacts, groups and users are checked
 * against the team later, in the creating transaction (checkReferences).
 */
function checkRow(content: TemplateContent, merge: MergeCheck, at: { raw: unknown; index: number; line?: number }): CheckedRow {
  const { raw, index, line } = at;
  const issues = new IssueCollector();
  const refused = () => ({ index, line, raw, issues: issues.issues, issuesOmitted: issues.omitted });
  // Text PostgreSQL cannot store is refused by its path, wherever it is (a key, an unknown property).
  const unstorable = unstorableTextPaths(raw, MAX_LISTED_ITEMS);
  if (unstorable.length > 0) {
    issues.add(...unstorable.map((path) => ({ path, message: 'must not contain NUL characters or broken Unicode' })));
    return refused();
  }
  const parsed = bulkSendRowInput.safeParse(raw);
  if (!parsed.success) {
    issues.add(...issuesFromZod(parsed.error));
    return refused();
  }
  const row: BulkSendRowInput = parsed.data;
  const entries: JumpstartEntry[] = row.recipients.map((entry) => ({ identifier: entry.identifier, agents: entry.agents }));
  let matched: ReturnType<typeof matchEntries> | undefined;
  try {
    matched = matchEntries(content.roles, entries);
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    const listed = (error.context.entries as { path: string; identifier?: string }[] | undefined) ?? [];
    for (const entry of listed) {
      issues.add({
        path: entry.path,
        message: error.name === 'Jumpstart.UnknownRecipient' ? `names no role of the template (${JSON.stringify(entry.identifier)})` : 'names a role another entry of this row already names',
      });
    }
  }
  if (matched) {
    for (const role of content.roles) {
      const entry = matched.get(role.id);
      const preAssigned = role.user != null || role.contact != null || role.contactGroup != null;
      if (preAssigned) continue;
      if (role.fixed) issues.add({ path: 'recipients', message: `role "${role.identifier}" is fixed and the template assigns it nobody` });
      else if (!entry || entry.entry.agents.length === 0) issues.add({ path: 'recipients', message: `role "${role.identifier}" needs a person: the template assigns it nobody` });
    }
  }
  const values: Record<string, Record<string, unknown>> = {};
  const fields = new Map(content.fields.map((field) => [field.identifier, field]));
  for (const [identifier, value] of Object.entries(row.values ?? {})) {
    const field = fields.get(identifier);
    const path = `values.${identifier}`;
    if (!field) {
      issues.add({ path, message: 'names no field of the template' });
      continue;
    }
    if (SIGNATURE_TYPES.includes(field.type)) {
      issues.add({ path, message: 'a signature is the signer’s own and cannot be prefilled' });
      continue;
    }
    if (field.type === 'attachment') {
      issues.add({ path, message: 'an attachment field cannot be prefilled: only its signer uploads its files (Attachment.NotPrefillable)' });
      continue;
    }
    const checked = parseFieldValue(field.type, value, field.config as Record<string, unknown>, path);
    issues.add(...checked.issues);
    if (checked.value !== null) values[identifier] = checked.value;
  }
  // The data tags: every missing path and value problem of the row, as a jumpstart lists them.
  if (row.data !== undefined || merge.documents.length > 0) {
    const data = (row.data ?? {}) as Record<string, unknown>;
    const bounds = mergeDataIssues(data, 'data');
    issues.add(...bounds);
    if (bounds.length === 0) issues.add(...planMerge(merge.documents, data, merge.missingData).issues);
  }
  if (issues.count > 0) return refused();
  const stored: StoredRow = { recipients: entries };
  if (row.data !== undefined) stored.data = row.data as Record<string, unknown>;
  if (row.data !== undefined || merge.documents.length > 0) stored.missingData = merge.missingData;
  if (row.name !== undefined) stored.name = row.name;
  if (row.context !== undefined) stored.context = row.context;
  if (Object.keys(values).length > 0) stored.values = values;
  return { index, line, raw, stored, issues: [], issuesOmitted: 0 };
}

/** Every contact, group and user a valid row names must be the team's (as for any recipient). */
async function checkReferences(em: EntityManager, teamId: string, rows: CheckedRow[]): Promise<void> {
  for (const row of rows) {
    if (!row.stored) continue;
    for (const [position, entry] of row.stored.recipients.entries()) {
      if (entry.agents.every((agent) => agent.info !== undefined)) continue;
      try {
        await resolveAgentInputs(em, teamId, entry.agents, `recipients[${position}].agents`);
      } catch (error) {
        if (!(error instanceof DomainError)) throw error;
        // Only a valid row gets here, so its list is empty: one issue per recipient entry at most.
        row.issues.push({ path: String(error.context.path ?? `recipients[${position}].agents`), message: error.description });
        row.stored = undefined;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// CSV

const CSV_PERSON_KEYS = ['name', 'email', 'phone', 'locale'] as const;

/** A CSV cell as the value of a field of this type (the JSON form's value shapes, docs/fields.md). */
function valueOfCell(type: FieldType, cell: string): unknown {
  if (type === 'text') return { text: cell };
  if (type === 'checkbox') {
    const folded = cell.trim().toLowerCase();
    if (['true', 'yes', '1', 'x'].includes(folded)) return { checked: true };
    if (['false', 'no', '0'].includes(folded)) return { checked: false };
    return { checked: cell };
  }
  if (type === 'radio') return { selected: cell };
  if (type === 'binary_choice') return { choice: cell.trim().toLowerCase() };
  // Issue 32's types. A number cell that is not one stays a string, refused by name at its value.
  if (type === 'number') return { number: /^\s*-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*$/.test(cell) ? Number(cell.trim()) : cell };
  if (type === 'date') return { date: cell.trim() };
  if (type === 'dropdown') return { selected: cell };
  if (type === 'initials') return { kind: 'typed', text: cell };
  // date_signed, full_name, email and formula take no value: the cell is refused at the value, saying so.
  return cell;
}

/**
 * A `data.` column's path as steps: names joined by dots, a list's item by its index (`items[0].name`).
 * Keys that name an object's machinery are refused: the row's data is built from these steps.
 */
function dataColumnSteps(path: string): (string | number)[] | string {
  const steps: (string | number)[] = [];
  for (const part of path.split('.')) {
    const match = /^([^\s.[\]{}]+)((?:\[[0-9]{1,3}\])*)$/.exec(part);
    if (!match) return 'is not a data path: names joined by dots, a list item as items[0]';
    if (UNFOLLOWED_DATA_KEYS.includes(match[1]!)) return `"${match[1]}" names no data`;
    steps.push(match[1]!, ...[...match[2]!.matchAll(/\[([0-9]+)\]/g)].map((index) => Number(index[1])));
  }
  if (steps.length > MERGE_DATA_LIMITS.maxDepth) return `has more than ${MERGE_DATA_LIMITS.maxDepth} parts`;
  return steps;
}

const UNFOLLOWED_DATA_KEYS = ['__proto__', 'constructor', 'prototype'];

/** Puts a cell at its path in the row's data, making the objects and lists on the way (own properties only). */
function setDataCell(data: Record<string, unknown>, steps: (string | number)[], cell: string): void {
  let container: Record<string, unknown> | unknown[] = data;
  steps.forEach((step, position) => {
    const last = position === steps.length - 1;
    const slot = container as Record<string | number, unknown>;
    if (last) {
      slot[step] = cell;
      return;
    }
    const next = steps[position + 1];
    const existing = Object.prototype.hasOwnProperty.call(slot, step) ? slot[step] : undefined;
    const wanted = typeof next === 'number' ? Array.isArray(existing) : existing !== null && typeof existing === 'object' && !Array.isArray(existing);
    if (!wanted) slot[step] = typeof next === 'number' ? [] : {};
    container = slot[step] as Record<string, unknown> | unknown[];
  });
}

/**
 * The CSV text as a table, read within BULK_SEND_CSV_LIMITS (stopping at the first thing past
 * one) and in chunks that give the event loop its turns. Outside any transaction: reading the
 * caller's file holds no lock and no connection.
 */
async function readCsvTable(text: string): Promise<CsvTable> {
  // The multipart form's file is counted as it arrives; a GraphQL `csv` text is held to the same size.
  if (text.length > MAX_BULK_SEND_CSV_BYTES || Buffer.byteLength(text) > MAX_BULK_SEND_CSV_BYTES) throw new PayloadTooLargeError(MAX_BULK_SEND_CSV_BYTES);
  try {
    return await parseCsvTable(text, BULK_SEND_CSV_LIMITS);
  } catch (error) {
    if (error instanceof CsvSyntaxError) throw new InvalidRequestError([{ path: `csv (line ${error.problem.line})`, message: error.problem.message }]);
    if (error instanceof CsvTooManyRecordsError) throw new BulkSendTooManyRowsError(MAX_BULK_SEND_ROWS);
    throw error;
  }
}

/**
 * The CSV file as JSON rows: `<role>.name|email|phone|locale` give the role one inline person,
 * `envelope.name` the envelope's name, `field.<identifier>` a field's value. An empty cell gives
 * nothing (a role with every cell empty keeps the template's person). An unknown column is
 * refused by name before any row is read.
 */
async function rowsOfCsv(content: TemplateContent, table: CsvTable): Promise<{ rows: unknown[]; lines: number[] }> {
  const roles = new Set(content.roles.map((role) => role.identifier));
  const fieldTypes = new Map(content.fields.map((field) => [field.identifier, field.type]));
  type Column =
    | { kind: 'person'; role: string; key: (typeof CSV_PERSON_KEYS)[number] }
    | { kind: 'name' }
    | { kind: 'field'; identifier: string; type: FieldType }
    | { kind: 'data'; steps: (string | number)[] };
  const issues: ValidationIssue[] = [];
  const columns: Column[] = table.header.map((heading, position) => {
    const name = heading.trim();
    const path = `csv.header[${position}]`;
    if (name === 'envelope.name') return { kind: 'name' };
    if (name.startsWith('data.')) {
      const steps = dataColumnSteps(name.slice('data.'.length));
      if (typeof steps === 'string') issues.push({ path, message: `"${name}": ${steps}` });
      return { kind: 'data', steps: typeof steps === 'string' ? [] : steps };
    }
    if (name.startsWith('field.')) {
      const identifier = name.slice('field.'.length);
      const type = fieldTypes.get(identifier);
      if (!type) issues.push({ path, message: `"${name}" names no field of the template` });
      return { kind: 'field', identifier, type: type ?? 'text' };
    }
    const dot = name.lastIndexOf('.');
    const role = name.slice(0, dot);
    const key = name.slice(dot + 1) as (typeof CSV_PERSON_KEYS)[number];
    if (dot <= 0 || !CSV_PERSON_KEYS.includes(key)) {
      issues.push({ path, message: `"${name}" is not a column of a bulk send: <role>.name, <role>.email, <role>.phone, <role>.locale, envelope.name, field.<identifier> or data.<path>` });
    } else if (!roles.has(role)) {
      issues.push({ path, message: `"${name}" names no role of the template` });
    }
    return { kind: 'person', role, key };
  });
  if (issues.length > 0) throw new InvalidRequestError(issues);
  const rows: unknown[] = [];
  for (const [position, record] of table.records.entries()) {
    if (position > 0 && position % ROWS_PER_TURN === 0) await yieldToEventLoop();
    const people = new Map<string, Record<string, string>>();
    const row: { recipients: unknown[]; name?: string; values?: Record<string, unknown>; data?: Record<string, unknown> } = { recipients: [] };
    columns.forEach((column, position) => {
      const cell = record.values[position] ?? '';
      if (cell === '') return;
      if (column.kind === 'name') row.name = cell;
      // Set in place: a copy per cell made a row of 1,000 field columns a million copies.
      else if (column.kind === 'field') (row.values ??= {})[column.identifier] = valueOfCell(column.type, cell);
      else if (column.kind === 'data') setDataCell((row.data ??= {}), column.steps, cell);
      else {
        const info = people.get(column.role) ?? {};
        info[column.key] = cell;
        people.set(column.role, info);
      }
    });
    for (const [identifier, info] of people) row.recipients.push({ identifier, agents: [{ info }] });
    rows.push(row);
  }
  return { rows, lines: table.records.map((record) => record.line) };
}

// ---------------------------------------------------------------------------------------------
// Creating

export type BulkSendSource = { kind: 'json'; body: unknown } | { kind: 'csv'; text: string; fields: Record<string, unknown> };

type BulkSendSettings = { name?: string; skipInvalidRows: boolean; missingData: 'refuse' | 'blank'; rows?: unknown[]; table?: CsvTable; dataTags?: DocumentTags[] };

function settingsOf(source: BulkSendSource): BulkSendSettings {
  if (source.kind === 'json') {
    const body = source.body;
    // Too many rows is its own answer, before any row is looked at.
    const rows = (body as { rows?: unknown })?.rows;
    if (Array.isArray(rows) && rows.length > MAX_BULK_SEND_ROWS) throw new BulkSendTooManyRowsError(MAX_BULK_SEND_ROWS, rows.length);
    const input = parseInput(bulkSendBody, body);
    return { name: input.name, skipInvalidRows: input.skipInvalidRows, missingData: input.missingData, rows: input.rows };
  }
  const fields = parseInput(createBulkSendCsvFields, source.fields);
  return { name: fields.name, skipInvalidRows: fields.skipInvalidRows === 'true', missingData: fields.missingData ?? 'refuse' };
}

async function recordBulkSend(
  context: Pick<ServiceContext, 'clock' | 'auditKey' | 'metadata'>,
  scope: { em: EntityManager; caller: TeamCaller },
  request: { templateId: string; source: BulkSendSource; settings: BulkSendSettings },
): Promise<string> {
  const { em, caller } = scope;
  const { templateId, source, settings } = request;
  // Share lock: the template stays as checked until the rows are recorded (each row's copy reads it again).
  const template = await findVisibleTemplate(em, caller, templateId, { lock: 'share' });
  const content = await loadTemplateContent(em, template);
  const readiness = readinessIssues(content);
  if (readiness.length > 0) throw new TemplateNotReadyError(template.id, readiness);

  let rawRows: unknown[];
  let lines: number[] | undefined;
  if (source.kind === 'csv') {
    ({ rows: rawRows, lines } = await rowsOfCsv(content, settings.table!));
    if (rawRows.length === 0) throw new InvalidRequestError([{ path: 'csv', message: 'has no row after its header' }]);
    if (rawRows.length > MAX_BULK_SEND_ROWS) throw new BulkSendTooManyRowsError(MAX_BULK_SEND_ROWS, rawRows.length);
  } else {
    rawRows = settings.rows!;
  }
  const checked: CheckedRow[] = [];
  for (const [index, raw] of rawRows.entries()) {
    // A thousand rows of many values each are seconds of checking: other requests get turns between.
    if (index > 0 && index % ROWS_PER_TURN === 0) await yieldToEventLoop();
    checked.push(checkRow(content, { documents: settings.dataTags ?? [], missingData: settings.missingData }, { raw, index, line: lines?.[index] }));
  }
  await checkReferences(em, caller.teamId, checked);
  const invalid: InvalidRow[] = checked
    .filter((row) => row.issues.length > 0)
    .map((row) => ({ index: row.index, ...(row.line === undefined ? {} : { line: row.line }), issues: row.issues, ...(row.issuesOmitted > 0 ? { issuesOmitted: row.issuesOmitted } : {}) }));
  if (invalid.length > 0 && !settings.skipInvalidRows) throw new BulkSendInvalidRowsError(invalid);

  const now = context.clock.now();
  const bulkSendId = newId();
  const failed = invalid.length;
  const finished = failed === checked.length;
  em.create(BulkSend, {
    id: bulkSendId,
    createdAt: now,
    updatedAt: now,
    team: caller.teamId,
    templateId: template.id,
    apiKeyId: caller.apiKeyId,
    workspaceId: caller.workspaceId,
    name: settings.name ?? null,
    status: finished ? 'completed' : 'queued',
    total: checked.length,
    failedCount: failed,
    completedAt: finished ? now : null,
  });
  await em.flush();
  // A hundred rows per statement: a thousand round trips would hold the transaction for seconds,
  // and one statement of all of them is megabytes of JSON escaped into its text in one go, which
  // held the event loop for a quarter of a second.
  const records = checked.map((row) =>
    row.stored
      ? { position: row.index, status: 'pending', input: row.stored, error: null }
      : {
          position: row.index,
          status: 'failed',
          // Kept for the caller to read back: made storable (it may hold, or its problems quote, text jsonb refuses).
          input: storableCopy(row.raw ?? {}) as object,
          error: storableCopy({
            name: 'Request.Invalid',
            description: 'The row is invalid; see context.issues.',
            context: { issues: row.issues, ...(row.issuesOmitted > 0 ? { issuesOmitted: row.issuesOmitted } : {}), ...(row.line === undefined ? {} : { line: row.line }) },
          }),
        },
  );
  for (let start = 0; start < records.length; start += ROWS_PER_INSERT) {
    await em.execute(
      `insert into bulk_send_row (id, created_at, bulk_send_id, position, status, input, error)
       select gen_random_uuid(), ?, ?, r.position, r.status, coalesce(r.input, '{}'::jsonb), r.error
         from jsonb_to_recordset(?::jsonb) as r(position int, status text, input jsonb, error jsonb)`,
      [now, bulkSendId, JSON.stringify(records.slice(start, start + ROWS_PER_INSERT))],
    );
  }
  await appendAuditEvent(em, context.auditKey, {
    teamId: caller.teamId,
    envelopeId: null,
    type: 'bulk_send.created',
    actor: apiKeyActor(caller),
    request: context.metadata,
    details: { bulkSendId, templateId: template.id, name: settings.name ?? null, total: checked.length, invalid: failed, source: source.kind },
    at: now,
  });
  if (!finished) await enqueue(em, OUTBOX_TOPICS.bulkSendStep, { teamId: caller.teamId, bulkSendId }, { now });
  else await recordCompletion(em, context.auditKey, { teamId: caller.teamId, bulkSendId, now });
  await em.flush();
  return bulkSendId;
}

/**
 * Records a bulk send and queues its job: every row is checked first, and with one invalid row
 * nothing is created (`Request.Invalid` listing every invalid row by index) unless
 * `skipInvalidRows` is true, when the invalid rows are recorded as failed with their problems and
 * the rest are sent. Idempotent per `Idempotency-Key`: a repeat answers the first bulk send's id
 * and queues nothing. Answers the bulk send's id.
 */
export async function createBulkSend(context: ServiceContext, options: { templateId: string; source: BulkSendSource; idempotencyKey?: string }): Promise<{ bulkSendId: string }> {
  const caller = await context.caller();
  const input = options.source.kind === 'json' ? options.source.body : { csv: options.source.text, ...options.source.fields };
  // Settings and the CSV file are checked before the transaction: reading the caller's file holds no lock.
  const settings = settingsOf(options.source);
  if (options.source.kind === 'csv') settings.table = await readCsvTable(options.source.text);
  // The template's data tags, read from its documents in a PDF worker before the transaction
  // (every row is checked against them). A refusal waits for the idempotency check, so that a
  // repeat answers its first bulk send.
  let tagsRefusal: { error: unknown } | undefined;
  try {
    settings.dataTags = await templateDataTags(context, context.em.fork(), caller, options.templateId);
  } catch (error) {
    if (options.idempotencyKey === undefined) throw error;
    tagsRefusal = { error };
  }
  const outcome = await context.em.transactional((em) =>
    runIdempotently(
      em,
      { teamId: caller.teamId, key: options.idempotencyKey, fingerprintOf: { operation: 'createBulkSend', templateId: options.templateId.toLowerCase(), input } },
      {
        perform: () => {
          if (tagsRefusal !== undefined) throw tagsRefusal.error;
          return recordBulkSend(context, { em, caller }, { templateId: options.templateId, source: options.source, settings });
        },
        answer: async (bulkSendId) => ({ bulkSendId }),
      },
    ),
  );
  return answerOf(outcome, async (bulkSendId) => ({ bulkSendId }));
}

/**
 * Marks a bulk send completed once no row is left to send (guarded: once), with its
 * `bulk_send.completed` event in the team's trail, which webhooks deliver, and the team's
 * `bulk_send_completed` notice to the notification addresses that asked for it.
 */
export async function recordCompletion(em: EntityManager, auditKey: Buffer, options: { teamId: string; bulkSendId: string; now: Date }): Promise<boolean> {
  const rows = await em.execute<{ total: number; created_count: number; sent_count: number; failed_count: number; template_id: string; api_key_id: string; name: string | null }[]>(
    `update bulk_send set status = 'completed', completed_at = ?, updated_at = ?
      where id = ? and status in ('queued', 'running')
        and not exists (select 1 from bulk_send_row r where r.bulk_send_id = bulk_send.id and r.status in ('pending', 'created'))
      returning total, created_count, sent_count, failed_count, template_id, api_key_id, name`,
    [options.now, options.now, options.bulkSendId],
  );
  const [done] = rows;
  if (!done) return false;
  await appendAuditEvent(em, auditKey, {
    teamId: options.teamId,
    envelopeId: null,
    type: 'bulk_send.completed',
    actor: { type: 'api_key', id: done.api_key_id },
    request: null,
    details: {
      bulkSendId: options.bulkSendId,
      templateId: done.template_id,
      name: done.name,
      total: done.total,
      created: done.created_count,
      sent: done.sent_count,
      failed: done.failed_count,
    },
    at: options.now,
  });
  // The team's notification addresses that asked for it are told, in the same transaction (once:
  // the guarded update above lets one caller through, and the notice's dedupe key is the bulk send).
  await queueTeamNotice(em, {
    teamId: options.teamId,
    envelopeId: null,
    event: 'bulk_send_completed',
    now: options.now,
    dedupe: options.bulkSendId,
    notice: { bulkSend: { id: options.bulkSendId, name: done.name, total: done.total, sent: done.sent_count, failed: done.failed_count } },
  });
  return true;
}

/**
 * Stops a bulk send: every row not yet sent (waiting, or made into a draft not yet sent) is
 * marked cancelled in one statement, so the job sends none of them (each of its row updates
 * is guarded on the row's status). Drafts already made stay as drafts. Cancelling a cancelled
 * bulk send again changes nothing; a completed one is `BulkSend.Finished`.
 *
 * Lock order (the job's, bulk-send.job.ts): rows first, in position order, then the bulk send.
 * The job locks one row and, in the same transaction, counts it on the bulk send; cancelling used
 * to lock the bulk send first and then the rows, so a row the job held waited for the bulk send
 * cancel held, and PostgreSQL ended one of them (`Resource.Conflict`, or a failed step) in 2 of 5
 * tries. Here the rows are taken first: a row the job is working on is waited for (and cancelled
 * if it is still unsent when the job lets go), and the bulk send's own row is changed last,
 * guarded on its status.
 */
export async function cancelBulkSend(context: ServiceContext, options: { bulkSendId: string }): Promise<void> {
  const caller = await context.caller();
  await context.em.transactional(async (em) => {
    // No lock: the tenant gate and the early answers only. Every change below is guarded.
    const bulkSend = await findTeamBulkSend(em, caller, options.bulkSendId);
    if (bulkSend.status === 'cancelled') return;
    if (bulkSend.status === 'completed') throw new BulkSendFinishedError(bulkSend.id, bulkSend.status);
    const now = context.clock.now();
    // The rows in position order: concurrent cancels take them in the same order (one statement's
    // own order follows whichever index it scans, and the status index reorders as rows move on,
    // so ten cancels at once deadlocked among themselves).
    const cancelled = await em.execute<{ id: string }[]>(
      `with taken as (
         select id from bulk_send_row where bulk_send_id = ? and status in ('pending', 'created') order by position for update
       )
       update bulk_send_row r set status = 'cancelled', processed_at = ?
         from taken where r.id = taken.id and r.status in ('pending', 'created')
       returning r.id`,
      [bulkSend.id, now],
    );
    const changed = await em.execute<{ id: string }[]>(
      `update bulk_send set status = 'cancelled', cancelled_at = ?, completed_at = ?, updated_at = ? where id = ? and status in ('queued', 'running') returning id`,
      [now, now, now, bulkSend.id],
    );
    if (changed.length === 0) {
      // Another request cancelled it, or the job completed it, while this one waited for its rows.
      const [current] = await em.execute<{ status: string }[]>(`select status from bulk_send where id = ?`, [bulkSend.id]);
      if (current?.status === 'cancelled') return;
      throw new BulkSendFinishedError(bulkSend.id, current?.status ?? 'completed');
    }
    await appendAuditEvent(em, context.auditKey, {
      teamId: caller.teamId,
      envelopeId: null,
      type: 'bulk_send.cancelled',
      actor: apiKeyActor(caller),
      request: context.metadata,
      details: { bulkSendId: bulkSend.id, templateId: bulkSend.templateId, cancelledRows: cancelled.length },
      at: now,
    });
  });
}
