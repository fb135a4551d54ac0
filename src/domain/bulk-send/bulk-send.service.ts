import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { DomainError, InvalidRequestError, type ValidationIssue } from '../../shared/errors.ts';
import { newId } from '../../shared/ids.ts';
import { appendAuditEvent } from '../audit/audit.service.ts';
import { apiKeyActor } from '../change.ts';
import { envelopeSettings } from '../envelope/envelope.service.ts';
import type { FieldType } from '../field/field.entity.ts';
import { parseFieldValue } from '../field/field-values.ts';
import { answerOf, runIdempotently } from '../idempotency/idempotency.service.ts';
import { enqueue } from '../outbox/outbox.ts';
import { OUTBOX_TOPICS } from '../outbox/topics.ts';
import { agentsSchema, resolveAgentInputs } from '../recipient/agent-input.ts';
import type { ServiceContext } from '../service-context.ts';
import type { TeamCaller } from '../team/team-caller.ts';
import { issuesFromZod, parseInput } from '../validation.ts';
import { loadTemplateContent, matchEntries, readinessIssues, type JumpstartEntry, type TemplateContent } from '../template/jumpstart.service.ts';
import { TemplateNotReadyError } from '../template/template.errors.ts';
import { findVisibleTemplate } from '../template/team-template.ts';
import { BulkSend } from './bulk-send.entity.ts';
import { BulkSendFinishedError, BulkSendInvalidRowsError, BulkSendTooManyRowsError, type InvalidRow } from './bulk-send.errors.ts';
import { findTeamBulkSend } from './team-bulk-send.ts';
import { CsvSyntaxError, parseCsvTable } from './csv.ts';

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

const rowRecipient = z.strictObject({
  identifier: z.string({ error: 'must be a role identifier of the template' }),
  agents: agentsSchema.default([]),
});

export const bulkSendRowInput = z.strictObject({
  recipients: z.array(rowRecipient).max(50, 'at most 50 entries, one per role of the template').default([]),
  name: envelopeSettings.name.optional(),
  context: envelopeSettings.context.optional(),
  values: z.record(z.string(), z.unknown(), { error: 'must be an object of field identifier → value' }).optional(),
});

type BulkSendRowInput = z.output<typeof bulkSendRowInput>;

const bulkSendSettings = {
  name: z.string({ error: 'must be text' }).trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters').optional(),
  skipInvalidRows: z.boolean({ error: 'must be true or false' }).default(false),
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
});

/** A row as the job takes it: the jumpstart's entries and the prefilled values, checked. */
export type StoredRow = { recipients: JumpstartEntry[]; name?: string; context?: Record<string, unknown>; values?: Record<string, Record<string, unknown>> };

type CheckedRow = { index: number; line?: number; raw: unknown; stored?: StoredRow; issues: ValidationIssue[] };

const SIGNATURE_TYPES: readonly FieldType[] = ['simple_signature', 'biometric_signature'];

/**
 * One row against the template: its shape, the roles it names (each at most once, each known),
 * a person for every role (from the row, or the role's pre-assigned person), and its values
 * (fields of the template, each valid for the field's type and config; signatures are the
 * signer's own and cannot be prefilled). References to contacts, groups and users are checked
 * against the team later, in the creating transaction (checkReferences).
 */
function checkRow(content: TemplateContent, raw: unknown, index: number, line?: number): CheckedRow {
  const parsed = bulkSendRowInput.safeParse(raw);
  if (!parsed.success) return { index, line, raw, issues: issuesFromZod(parsed.error) };
  const row: BulkSendRowInput = parsed.data;
  const issues: ValidationIssue[] = [];
  const entries: JumpstartEntry[] = row.recipients.map((entry) => ({ identifier: entry.identifier, agents: entry.agents }));
  let matched: ReturnType<typeof matchEntries> | undefined;
  try {
    matched = matchEntries(content.roles, entries);
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    const listed = (error.context.entries as { path: string; identifier?: string }[] | undefined) ?? [];
    for (const entry of listed) {
      issues.push({
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
      if (role.fixed) issues.push({ path: 'recipients', message: `role "${role.identifier}" is fixed and the template assigns it nobody` });
      else if (!entry || entry.entry.agents.length === 0) issues.push({ path: 'recipients', message: `role "${role.identifier}" needs a person: the template assigns it nobody` });
    }
  }
  const values: Record<string, Record<string, unknown>> = {};
  const fields = new Map(content.fields.map((field) => [field.identifier, field]));
  for (const [identifier, value] of Object.entries(row.values ?? {})) {
    const field = fields.get(identifier);
    const path = `values.${identifier}`;
    if (!field) {
      issues.push({ path, message: 'names no field of the template' });
      continue;
    }
    if (SIGNATURE_TYPES.includes(field.type)) {
      issues.push({ path, message: 'a signature is the signer’s own and cannot be prefilled' });
      continue;
    }
    const checked = parseFieldValue(field.type, value, field.config as Record<string, unknown>, path);
    issues.push(...checked.issues);
    if (checked.value !== null) values[identifier] = checked.value;
  }
  if (issues.length > 0) return { index, line, raw, issues };
  const stored: StoredRow = { recipients: entries };
  if (row.name !== undefined) stored.name = row.name;
  if (row.context !== undefined) stored.context = row.context;
  if (Object.keys(values).length > 0) stored.values = values;
  return { index, line, raw, stored, issues };
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
 * The CSV file as JSON rows: `<role>.name|email|phone|locale` give the role one inline person,
 * `envelope.name` the envelope's name, `field.<identifier>` a field's value. An empty cell gives
 * nothing (a role with every cell empty keeps the template's person). An unknown column is
 * refused by name before any row is read.
 */
function rowsOfCsv(content: TemplateContent, text: string): { rows: unknown[]; lines: number[] } {
  let table;
  try {
    table = parseCsvTable(text);
  } catch (error) {
    if (error instanceof CsvSyntaxError) throw new InvalidRequestError([{ path: `csv (line ${error.problem.line})`, message: error.problem.message }]);
    throw error;
  }
  const roles = new Set(content.roles.map((role) => role.identifier));
  const fieldTypes = new Map(content.fields.map((field) => [field.identifier, field.type]));
  type Column = { kind: 'person'; role: string; key: (typeof CSV_PERSON_KEYS)[number] } | { kind: 'name' } | { kind: 'field'; identifier: string; type: FieldType };
  const issues: ValidationIssue[] = [];
  const columns: Column[] = table.header.map((heading, position) => {
    const name = heading.trim();
    const path = `csv.header[${position}]`;
    if (name === 'envelope.name') return { kind: 'name' };
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
      issues.push({ path, message: `"${name}" is not a column of a bulk send: <role>.name, <role>.email, <role>.phone, <role>.locale, envelope.name or field.<identifier>` });
    } else if (!roles.has(role)) {
      issues.push({ path, message: `"${name}" names no role of the template` });
    }
    return { kind: 'person', role, key };
  });
  if (issues.length > 0) throw new InvalidRequestError(issues);
  const rows = table.records.map((record) => {
    const people = new Map<string, Record<string, string>>();
    const row: { recipients: unknown[]; name?: string; values?: Record<string, unknown> } = { recipients: [] };
    columns.forEach((column, position) => {
      const cell = record.values[position] ?? '';
      if (cell === '') return;
      if (column.kind === 'name') row.name = cell;
      else if (column.kind === 'field') row.values = { ...row.values, [column.identifier]: valueOfCell(column.type, cell) };
      else people.set(column.role, { ...people.get(column.role), [column.key]: cell });
    });
    for (const [identifier, info] of people) row.recipients.push({ identifier, agents: [{ info }] });
    return row;
  });
  return { rows, lines: table.records.map((record) => record.line) };
}

// ---------------------------------------------------------------------------------------------
// Creating

export type BulkSendSource = { kind: 'json'; body: unknown } | { kind: 'csv'; text: string; fields: Record<string, unknown> };

function settingsOf(source: BulkSendSource): { name?: string; skipInvalidRows: boolean; rows?: unknown[] } {
  if (source.kind === 'json') {
    const body = source.body;
    // Too many rows is its own answer, before any row is looked at.
    const rows = (body as { rows?: unknown })?.rows;
    if (Array.isArray(rows) && rows.length > MAX_BULK_SEND_ROWS) throw new BulkSendTooManyRowsError(MAX_BULK_SEND_ROWS, rows.length);
    const input = parseInput(bulkSendBody, body);
    return { name: input.name, skipInvalidRows: input.skipInvalidRows, rows: input.rows };
  }
  const fields = parseInput(createBulkSendCsvFields, source.fields);
  return { name: fields.name, skipInvalidRows: fields.skipInvalidRows === 'true' };
}

async function recordBulkSend(context: Pick<ServiceContext, 'clock' | 'auditKey' | 'metadata'>, em: EntityManager, caller: TeamCaller, templateId: string, source: BulkSendSource): Promise<string> {
  const settings = settingsOf(source);
  // Share lock: the template stays as checked until the rows are recorded (each row's copy reads it again).
  const template = await findVisibleTemplate(em, caller, templateId, { lock: 'share' });
  const content = await loadTemplateContent(em, template);
  const readiness = readinessIssues(content);
  if (readiness.length > 0) throw new TemplateNotReadyError(template.id, readiness);

  let rawRows: unknown[];
  let lines: number[] | undefined;
  if (source.kind === 'csv') {
    ({ rows: rawRows, lines } = rowsOfCsv(content, source.text));
    if (rawRows.length === 0) throw new InvalidRequestError([{ path: 'csv', message: 'has no row after its header' }]);
    if (rawRows.length > MAX_BULK_SEND_ROWS) throw new BulkSendTooManyRowsError(MAX_BULK_SEND_ROWS, rawRows.length);
  } else {
    rawRows = settings.rows!;
  }
  const checked = rawRows.map((raw, index) => checkRow(content, raw, index, lines?.[index]));
  await checkReferences(em, caller.teamId, checked);
  const invalid: InvalidRow[] = checked
    .filter((row) => row.issues.length > 0)
    .map((row) => ({ index: row.index, ...(row.line === undefined ? {} : { line: row.line }), issues: row.issues }));
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
  // Every row in one statement: a thousand round trips would hold the transaction for seconds.
  const records = checked.map((row) =>
    row.stored
      ? { position: row.index, status: 'pending', input: row.stored, error: null }
      : {
          position: row.index,
          status: 'failed',
          input: (row.raw ?? {}) as object,
          error: { name: 'Request.Invalid', description: 'The row is invalid; see context.issues.', context: { issues: row.issues, ...(row.line === undefined ? {} : { line: row.line }) } },
        },
  );
  await em.execute(
    `insert into bulk_send_row (id, created_at, bulk_send_id, position, status, input, error)
     select gen_random_uuid(), ?, ?, r.position, r.status, coalesce(r.input, '{}'::jsonb), r.error
       from jsonb_to_recordset(?::jsonb) as r(position int, status text, input jsonb, error jsonb)`,
    [now, bulkSendId, JSON.stringify(records)],
  );
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
  const outcome = await context.em.transactional((em) =>
    runIdempotently(
      em,
      { teamId: caller.teamId, key: options.idempotencyKey, fingerprintOf: { operation: 'createBulkSend', templateId: options.templateId.toLowerCase(), input } },
      {
        perform: () => recordBulkSend(context, em, caller, options.templateId, options.source),
        answer: async (bulkSendId) => ({ bulkSendId }),
      },
    ),
  );
  return answerOf(outcome, async (bulkSendId) => ({ bulkSendId }));
}

/**
 * Marks a bulk send completed once no row is left to send (guarded: once), with its
 * `bulk_send.completed` event in the team's trail, which webhooks deliver.
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
    details: { bulkSendId: options.bulkSendId, templateId: done.template_id, name: done.name, total: done.total, created: done.created_count, sent: done.sent_count, failed: done.failed_count },
    at: options.now,
  });
  return true;
}

/**
 * Stops a bulk send: every row not yet sent (waiting, or made into a draft not yet sent) is
 * marked cancelled in one statement, so the job sends none of them (each of its row updates
 * is guarded on the row's status). Drafts already made stay as drafts. Cancelling a cancelled
 * bulk send again changes nothing; a completed one is `BulkSend.Finished`.
 */
export async function cancelBulkSend(context: ServiceContext, options: { bulkSendId: string }): Promise<void> {
  const caller = await context.caller();
  await context.em.transactional(async (em) => {
    const bulkSend = await findTeamBulkSend(em, caller, options.bulkSendId, { lock: true });
    if (bulkSend.status === 'cancelled') return;
    if (bulkSend.status === 'completed') throw new BulkSendFinishedError(bulkSend.id, bulkSend.status);
    const now = context.clock.now();
    const cancelled = await em.execute<{ id: string }[]>(
      `update bulk_send_row set status = 'cancelled', processed_at = ? where bulk_send_id = ? and status in ('pending', 'created') returning id`,
      [now, bulkSend.id],
    );
    await em.execute(`update bulk_send set status = 'cancelled', cancelled_at = ?, completed_at = ?, updated_at = ? where id = ?`, [now, now, now, bulkSend.id]);
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

