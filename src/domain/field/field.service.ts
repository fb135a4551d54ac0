import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { InvalidRequestError, type ValidationIssue } from '../../shared/errors.ts';
import { createEventLoopYielder } from '../../shared/event-loop.ts';
import { isUuid } from '../../shared/ids.ts';
import { ensureCapacity } from '../capacity.ts';
import { Document, type PageSize } from '../document/document.entity.ts';
import { ensureRecipientsOpen } from '../owner/correction.ts';
import { type FieldData, readField, readFields } from '../owner/owner.read.ts';
import { type ContentOwner, createInOwner, fieldAssignee, type OwnedRecipient, type OwnerChange, ownerColumns, recipientsIn } from '../owner/owner.ts';
import type { OwnerKind, OwnerRef } from '../owner/owner-ref.ts';
import { contentOwner } from '../owner/owners.ts';
import type { ServiceContext } from '../service-context.ts';
import { formatPath, identifierSlug, issuesFromZod, readableName } from '../validation.ts';
import { AttachmentNotPrefillableError } from './attachment.errors.ts';
import { Field, type FieldType, fieldTypes } from './field.entity.ts';
import { FieldDuplicateIdentifierError, FieldInUseError, FieldNotAllowedForRecipientError, FieldNotFoundError } from './field.errors.ts';
import { viewsNotFitting } from './field-fit.ts';
import { conditionTestsFor, FORMULA_INPUT_TYPES, isIsoDate, orderByDependencies, parseExpression, type VisibleWhen } from './field-rules.js';
import { NOT_SENT_TYPES, parseFieldConfig, parseFieldValue, parseVisibleWhen } from './field-values.ts';
import { FieldView } from './field-view.entity.ts';

/*
 * Fields of an envelope or a template (owner/owner.ts), one set of rules for both: their shapes,
 * values and configs by type (field-values.ts), placements on the owner's documents, assignment
 * to the owner's recipients, unique identifiers, all-or-nothing batches and the owner's capacity.
 */

export const MAX_FIELDS_PER_REQUEST = 500;
export const MAX_VIEWS_PER_FIELD = 500;
/** Placements may touch the page edge; this absorbs rounding in callers' point arithmetic. */
const PAGE_EDGE_TOLERANCE = 0.01;
const SIGNATURE_TYPES: readonly FieldType[] = ['simple_signature', 'biometric_signature'];

const finitePoint = z.number({ error: 'must be a number of points' }).finite('must be a finite number');

const viewSchema = z.strictObject({
  documentId: z.string({ error: 'must be a document id' }),
  page: z.int({ error: 'must be a zero-based page index' }).min(0, 'must be a zero-based page index'),
  location: z.strictObject({ x: finitePoint.min(0, 'must be 0 or more'), y: finitePoint.min(0, 'must be 0 or more') }),
  size: z.strictObject({ width: finitePoint.positive('must be more than 0'), height: finitePoint.positive('must be more than 0') }),
});

const fieldShape = {
  type: z.enum(fieldTypes, { error: `must be one of ${fieldTypes.join(', ')}` }),
  recipientId: z.string({ error: 'must be a recipient id' }),
  identifier: identifierSlug,
  label: readableName(0, 200).nullable(),
  tooltip: readableName(0, 500).nullable(),
  required: z.boolean({ error: 'must be true or false' }),
  readonly: z.boolean({ error: 'must be true or false' }),
  value: z.unknown(),
  config: z.unknown(),
  visibleWhen: z.unknown(),
  views: z.array(viewSchema).min(1, 'must place the field at least once').max(MAX_VIEWS_PER_FIELD, `at most ${MAX_VIEWS_PER_FIELD} views`),
};

const createFieldSchema = z.strictObject({
  ...fieldShape,
  label: fieldShape.label.optional(),
  tooltip: fieldShape.tooltip.optional(),
  required: fieldShape.required.optional(),
  readonly: fieldShape.readonly.optional(),
  value: fieldShape.value.optional(),
  config: fieldShape.config.optional(),
  visibleWhen: fieldShape.visibleWhen.optional(),
});

/**
 * The request's outer shape only: each field's shape is checked on its own (`parseEachField`),
 * so that one malformed field does not hide the problems of the others.
 */
export const createFieldsInput = z.strictObject({
  fields: z.array(z.unknown()).min(1, 'must contain at least one field').max(MAX_FIELDS_PER_REQUEST, `at most ${MAX_FIELDS_PER_REQUEST} fields per request`),
});

/**
 * The request as the OpenAPI document describes it: each field's shape spelled out (its `type`
 * among every field type). The service parses the outer shape and each field on its own instead,
 * so that one malformed field does not hide the others' problems.
 */
export const documentedCreateFieldsInput = z.strictObject({ fields: z.array(createFieldSchema).min(1).max(MAX_FIELDS_PER_REQUEST) });

type CreateFieldInput = z.output<typeof createFieldSchema>;

/** Each field's shape, in request order: the parsed field, or `null` with its issues. */
function parseEachField(fields: unknown[]): { field: CreateFieldInput | null; issues: ValidationIssue[] }[] {
  return fields.map((input, index) => {
    const result = createFieldSchema.safeParse(input);
    if (result.success) return { field: result.data, issues: [] };
    return { field: null, issues: issuesFromZod(result.error, formatPath(['fields', index])) };
  });
}

export const updateFieldInput = z.strictObject({ field: z.strictObject(fieldShape).partial() });

type ViewInput = z.output<typeof viewSchema>;

/** A field as it will be written, after every check passed. */
type CheckedField = {
  type: FieldType;
  /** An envelope's recipient or a template's role. */
  recipient: OwnedRecipient;
  identifier: string;
  label: string | null;
  tooltip: string | null;
  required: boolean;
  readonly: boolean;
  value: Record<string, unknown> | null;
  config: Record<string, unknown>;
  visibleWhen: Record<string, unknown> | null;
  views: { document: Document; page: number; x: number; y: number; width: number; height: number }[];
};

type FieldCandidate = {
  type: FieldType;
  recipientId: string;
  identifier: string;
  label: string | null;
  tooltip: string | null;
  required: boolean;
  readonly: boolean;
  value: unknown;
  config: unknown;
  visibleWhen: unknown;
  views: ViewInput[];
};

/**
 * What placements and assignments are checked against: the owner's (an envelope's or a
 * template's) documents and recipients.
 */
type FieldTargets = { documents: Map<string, Document>; recipients: Map<string, OwnedRecipient>; ownerNoun: OwnerKind };

/** The targets of an owner, from its documents and recipients. */
async function loadTargets(change: OwnerChange, owner: ContentOwner): Promise<FieldTargets> {
  const [documents, recipients] = await Promise.all([change.em.find(Document, change.scope), change.em.find(owner.recipients.entity, recipientsIn(change.scope))]);
  return {
    documents: new Map(documents.map((document) => [document.id, document])),
    recipients: new Map(recipients.map((recipient) => [recipient.id, recipient])),
    ownerNoun: owner.kind,
  };
}

/** A box must lie on its page: within the page's displayed width and height, in points. */
function checkViewBox(view: ViewInput, page: PageSize, path: string, issues: ValidationIssue[]) {
  if (view.location.x + view.size.width > page.width + PAGE_EDGE_TOLERANCE) {
    issues.push({ path: `${path}.size.width`, message: `the box ends at x=${view.location.x + view.size.width}, past the page width ${page.width}` });
  }
  if (view.location.y + view.size.height > page.height + PAGE_EDGE_TOLERANCE) {
    issues.push({ path: `${path}.size.height`, message: `the box ends at y=${view.location.y + view.size.height}, past the page height ${page.height}` });
  }
}

/**
 * Every rule a field must satisfy, collected for all fields at once so the caller sees every
 * problem in one answer: the recipient belongs to the owner and may hold fields; config and
 * value fit the type (docs/fields.md); a readonly field carries its value; each view's document
 * belongs to the owner, its page exists and its box lies on the page.
 */
function checkField(candidate: FieldCandidate, targets: FieldTargets, path: string, issues: ValidationIssue[]): CheckedField | null {
  const before = issues.length;
  const recipient = isUuid(candidate.recipientId) ? targets.recipients.get(candidate.recipientId) : undefined;
  if (!recipient) {
    issues.push({ path: `${path}.recipientId`, message: `must be the id of a recipient in this ${targets.ownerNoun}` });
  } else if (recipient.type === 'viewer') {
    issues.push({ path: `${path}.recipientId`, message: 'names a viewer; viewers only receive the finished copy and hold no fields' });
  } else if (recipient.type === 'approver') {
    // Its own name (not one issue among many): an approver approves the documents as they are.
    throw new FieldNotAllowedForRecipientError({ recipientId: recipient.id, type: recipient.type, path: `${path}.recipientId` });
  }
  // Only the signer uploads an attachment's files; a value from the sender would name none of them.
  if (candidate.type === 'attachment' && candidate.value != null) throw new AttachmentNotPrefillableError(`${path}.value`);
  const config = parseFieldConfig(candidate.type, candidate.config ?? {}, `${path}.config`);
  issues.push(...config.issues);
  const value = config.issues.length === 0 ? parseFieldValue(candidate.type, candidate.value, config.config, `${path}.value`) : { value: null, issues: [] };
  issues.push(...value.issues);
  const visibleWhen = parseVisibleWhen(candidate.visibleWhen, `${path}.visibleWhen`);
  issues.push(...visibleWhen.issues);
  // A field the service fills or computes has no value to carry: readonly is what it is anyway.
  if (candidate.readonly && candidate.value == null && !NOT_SENT_TYPES.includes(candidate.type)) {
    issues.push({ path: `${path}.value`, message: 'is required for a readonly field: the signer cannot fill it in' });
  }
  const views: CheckedField['views'] = [];
  candidate.views.forEach((view, index) => {
    const viewPath = `${path}.views[${index}]`;
    const document = isUuid(view.documentId) ? targets.documents.get(view.documentId) : undefined;
    if (!document) {
      issues.push({ path: `${viewPath}.documentId`, message: `must be the id of a document in this ${targets.ownerNoun}` });
      return;
    }
    const page = document.pages[view.page];
    if (!page) {
      issues.push({ path: `${viewPath}.page`, message: `must be a page index from 0 to ${document.pageCount - 1}` });
      return;
    }
    checkViewBox(view, page, viewPath, issues);
    views.push({ document, page: view.page, x: view.location.x, y: view.location.y, width: view.size.width, height: view.size.height });
  });
  // A value the sender gives is drawn as it stands: it must fit its boxes as the sealed PDF draws
  // it (field-fit.ts; the signer's values are held to the same at submit). Numbers are measured
  // as en-US writes them: another locale's separators are the same width to a fraction.
  if (value.value !== null && value.value !== undefined && views.length > 0) {
    for (const misfit of viewsNotFitting({ id: '', identifier: candidate.identifier, type: candidate.type, config: config.config, value: value.value }, views, 'en-US')) {
      issues.push({
        path: `${path}.value`,
        message: `is too long for its box on page ${misfit.page} even wrapped at 8 pt, the smallest size values are drawn at: shorten it or enlarge the box`,
      });
    }
  }
  if (issues.length > before || !recipient) return null;
  return {
    type: candidate.type,
    recipient,
    identifier: candidate.identifier,
    label: candidate.label,
    tooltip: candidate.tooltip,
    required: candidate.required,
    readonly: candidate.readonly,
    value: value.value,
    config: config.config,
    visibleWhen: visibleWhen.visibleWhen,
    views,
  };
}

/**
 * Checks a batch of new fields against their owner's targets, all at once: every problem of every
 * field is collected and reported in one `Request.Invalid` (a malformed field reports its shape
 * problems only; its content cannot be trusted), including identifiers repeated within the batch.
 * Answers the checked fields in request order and their identifiers, which the caller checks
 * against the owner's existing fields.
 */
async function checkFieldBatch(shaped: ReturnType<typeof parseEachField>, targets: FieldTargets): Promise<{ checked: CheckedField[]; identifiers: string[] }> {
  const issues: ValidationIssue[] = [];
  const seen = new Map<string, number>();
  // Up to 500 fields, each with a pattern to compile and match (tens of ms at worst): the loop
  // gives other requests their turn between fields instead of holding the event loop.
  const yieldNow = createEventLoopYielder();
  const checked: Array<CheckedField | null> = [];
  for (const [index, { field: input, issues: shapeIssues }] of shaped.entries()) {
    await yieldNow();
    if (input === null) {
      issues.push(...shapeIssues);
      checked.push(null);
      continue;
    }
    const path = formatPath(['fields', index]);
    const earlier = seen.get(input.identifier);
    if (earlier !== undefined) {
      issues.push({ path: `${path}.identifier`, message: `repeats the identifier of fields[${earlier}]` });
    } else {
      seen.set(input.identifier, index);
    }
    checked.push(
      checkField(
        {
          ...input,
          label: input.label ?? null,
          tooltip: input.tooltip ?? null,
          required: input.required ?? SIGNATURE_TYPES.includes(input.type),
          readonly: input.readonly ?? false,
          value: input.value,
          config: input.config,
          visibleWhen: input.visibleWhen,
        },
        targets,
        path,
        issues,
      ),
    );
  }
  if (issues.length > 0) throw new InvalidRequestError(issues);
  return { checked: checked as CheckedField[], identifiers: [...seen.keys()] };
}

/**
 * A field changed by a patch, checked whole as if it were new (see updateField): only given keys
 * change, `views` replaces all views, a type change starts from the new type's default config.
 * `Request.Invalid` with every problem otherwise.
 */
function checkFieldPatch(field: Field, current: { recipientId: string; views: FieldView[] }, patch: z.output<typeof updateFieldInput>['field'], targets: FieldTargets): CheckedField {
  const issues: ValidationIssue[] = [];
  const typeChanged = patch.type !== undefined && patch.type !== field.type;
  const checked = checkField(
    {
      type: patch.type ?? field.type,
      recipientId: patch.recipientId ?? current.recipientId,
      identifier: patch.identifier ?? field.identifier,
      label: patch.label !== undefined ? patch.label : (field.label ?? null),
      tooltip: patch.tooltip !== undefined ? patch.tooltip : (field.tooltip ?? null),
      required: patch.required ?? field.required,
      readonly: patch.readonly ?? field.readonly,
      // A new type starts from its default config unless one is given; the value is kept and
      // re-checked against the new type, so a pre-filled value is never lost silently.
      config: patch.config !== undefined ? patch.config : typeChanged ? {} : field.config,
      value: patch.value !== undefined ? patch.value : field.value,
      visibleWhen: patch.visibleWhen !== undefined ? patch.visibleWhen : (field.visibleWhen ?? null),
      views:
        patch.views ??
        current.views.map((view) => ({
          documentId: view.document.id,
          page: view.page,
          location: { x: Number(view.x), y: Number(view.y) },
          size: { width: Number(view.width), height: Number(view.height) },
        })),
    },
    targets,
    'field',
    issues,
  );
  if (issues.length > 0 || !checked) throw new InvalidRequestError(issues);
  return checked;
}

/** What the rules between fields read of each field of an owner (field-rules.js), with its recipient's place in the signing order. */
type RuleFieldData = {
  id?: string;
  identifier: string;
  type: FieldType;
  config: Record<string, unknown>;
  visibleWhen: VisibleWhen | null;
  recipientId: string;
  recipientOrder: number;
};

/** Every field of the owner as the rules between fields read them. */
async function ownerRuleFields(change: OwnerChange): Promise<RuleFieldData[]> {
  const [recipientTable, recipientColumn, ownerColumn] =
    'envelope' in change.scope ? ['recipient', 'recipient_id', 'envelope_id'] : ['template_recipient', 'template_recipient_id', 'template_id'];
  // In the change's own transaction (em.execute), under the owner's lock: the fields as they stand.
  return change.em.execute<RuleFieldData[]>(
    `select f.id, f.identifier, f.type, f.config, f.visible_when as "visibleWhen", r.id as "recipientId", r."order" as "recipientOrder"
       from field f join ${recipientTable} r on r.id = f.${recipientColumn} where f.${ownerColumn} = ?`,
    [change.ownerId],
  );
}

/** A checked field as the rules between fields read it. */
function ruleDataOf(field: CheckedField): RuleFieldData {
  return {
    identifier: field.identifier,
    type: field.type,
    config: field.config,
    visibleWhen: field.visibleWhen as VisibleWhen | null,
    recipientId: field.recipient.id,
    recipientOrder: field.recipient.order,
  };
}

/** What `equal` and `not_equal` compare a field of this type with (field-rules.js comparableValue), and `greater`/`less`. */
function conditionValueProblem(type: FieldType, is: string, value: unknown): string | undefined {
  const numeric = type === 'number' || type === 'formula';
  if (numeric) return typeof value === 'number' ? undefined : `must be a number: the ${type} field is compared as a number`;
  if (type === 'date') return typeof value === 'string' && isIsoDate(value) ? undefined : 'must be a date written YYYY-MM-DD: the date field is compared as a date';
  if (type === 'checkbox') return typeof value === 'boolean' ? undefined : 'must be true or false: the checkbox is compared by whether it is ticked';
  if (type === 'binary_choice') return value === 'accept' || value === 'decline' ? undefined : 'must be "accept" or "decline"';
  if (is === 'equal' || is === 'not_equal') return typeof value === 'string' ? undefined : `must be a string: the ${type} field is compared as text`;
  return undefined;
}

/**
 * The rules between an owner's fields, over the whole owner as it would be after a change: a
 * formula names only fields of the owner, of the types a formula reads, and no formula depends on
 * itself through others (issue 32). Answers each problem with the identifier of the field it is
 * about and the part of that field at fault.
 */
function fieldReferenceProblems(fields: RuleFieldData[], ownerNoun: OwnerKind, changed: ReadonlySet<string>): { identifier: string; at: string; message: string }[] {
  const problems: { identifier: string; at: string; message: string }[] = [];
  const typeOf = new Map(fields.map((field) => [field.identifier, field.type]));
  for (const field of fields) {
    if (field.type !== 'formula') continue;
    const parsed = parseExpression(field.config.expression);
    if (!('identifiers' in parsed)) continue;
    for (const name of parsed.identifiers) {
      const type = typeOf.get(name);
      if (type === undefined) problems.push({ identifier: field.identifier, at: 'config.expression', message: `names "${name}", which is not a field of this ${ownerNoun}` });
      else if (!FORMULA_INPUT_TYPES.includes(type)) {
        problems.push({ identifier: field.identifier, at: 'config.expression', message: `names "${name}", a ${type} field; a formula reads ${FORMULA_INPUT_TYPES.join(', ')} fields` });
      }
    }
  }
  const byIdentifier = new Map(fields.map((field) => [field.identifier, field]));
  for (const field of fields) {
    for (const list of ['all', 'any'] as const) {
      (field.visibleWhen?.[list] ?? []).forEach((condition, index) => {
        const at = `visibleWhen.${list}[${index}]`;
        const named = byIdentifier.get(condition.field);
        if (named === undefined) {
          problems.push({ identifier: field.identifier, at: `${at}.field`, message: `names "${condition.field}", which is not a field of this ${ownerNoun}` });
          return;
        }
        // The values a condition reads must be there when its field's recipient signs: theirs, or an earlier recipient's.
        if (named.recipientId !== field.recipientId && named.recipientOrder >= field.recipientOrder) {
          problems.push({
            identifier: field.identifier,
            at: `${at}.field`,
            message: `names "${condition.field}", a field of a recipient who does not sign before this field's recipient (order ${named.recipientOrder}, not below ${field.recipientOrder})`,
          });
          return;
        }
        const tests = conditionTestsFor(named.type);
        if (!tests.includes(condition.is)) {
          problems.push({
            identifier: field.identifier,
            at: `${at}.is`,
            message: `cannot test a ${named.type} field with "${condition.is}"; it may test ${tests.map((test) => `"${test}"`).join(', ')}`,
          });
          return;
        }
        if (condition.value === undefined) return;
        const problem = conditionValueProblem(named.type, condition.is, condition.value);
        if (problem !== undefined) problems.push({ identifier: field.identifier, at: `${at}.value`, message: problem });
      });
    }
  }
  const { cycle } = orderByDependencies(fields.map((field) => ({ ...field, value: null })));
  if (cycle !== null) {
    // Told from a field the request changed, where the caller can mend it.
    const members = cycle.slice(0, -1);
    const start = Math.max(
      0,
      members.findIndex((identifier) => changed.has(identifier)),
    );
    const rotated = [...members.slice(start), ...members.slice(0, start), members[start]];
    const first = byIdentifier.get(rotated[0]);
    // A cycle runs through a formula's expression or a field's conditions; it is told at the first field's own part.
    const at = first?.type === 'formula' && dependsOnThroughFormula(first, rotated[1]) ? 'config.expression' : 'visibleWhen';
    problems.push({ identifier: rotated[0], at, message: `is circular: ${rotated.join(' → ')}` });
  }
  return problems;
}

/**
 * Refuses a batch or a patch that breaks the rules between the owner's fields, reporting each
 * problem at the changed field's path (`fields[2].config.expression`) or, for a field the request
 * did not touch, at `otherPath` with that field named.
 */
function ensureFieldReferences(fields: RuleFieldData[], ownerNoun: OwnerKind, pathOf: Map<string, string>, otherPath: string) {
  const problems = fieldReferenceProblems(fields, ownerNoun, new Set(pathOf.keys()));
  if (problems.length === 0) return;
  throw new InvalidRequestError(
    problems.map((problem) => {
      const path = pathOf.get(problem.identifier);
      return path !== undefined
        ? { path: `${path}.${problem.at}`, message: problem.message }
        : { path: otherPath, message: `would break field "${problem.identifier}": its ${problem.at.replace('config.', '')} ${problem.message}` };
    }),
  );
}

/** Placements of every field of an owner (the views cap). */
function countViews(change: OwnerChange): Promise<number> {
  return change.em.count(FieldView, { field: change.scope });
}

function writeViews(em: EntityManager, field: Field, views: CheckedField['views']) {
  views.forEach((view, position) => em.persist(em.create(FieldView, { field, position, ...view })));
}

/**
 * Writes a batch of fields into an owner under its lock, all or nothing: every field's shape and
 * rules (all problems at once, `Request.Invalid`), identifiers unique within the owner, the
 * owner's capacity; one `field.added` event (with `details` added) records the batch. Answers the
 * created fields in the batch's order. Shared by `createFields` and placing fields from a PDF
 * (placement.service.ts).
 */
export async function addFieldsToOwner(
  context: ServiceContext,
  change: OwnerChange,
  owner: ContentOwner,
  adding: { shaped: ReturnType<typeof parseEachField>; details: Record<string, unknown> },
): Promise<{ field: Field; recipientId: string }[]> {
  const { shaped, details } = adding;
  const { em } = change;
  const { capacity } = owner;
  const { checked: batch, identifiers } = await checkFieldBatch(shaped, await loadTargets(change, owner));
  // Correcting a sent envelope: fields only for recipients that have not acted.
  await ensureRecipientsOpen(
    change,
    batch.map((field) => field.recipient.id),
  );
  const taken = await em.find(Field, { ...change.scope, identifier: { $in: identifiers } }, { fields: ['identifier'] });
  if (taken.length > 0) throw new FieldDuplicateIdentifierError(taken.map((field) => field.identifier));
  const pathOf = new Map(shaped.flatMap(({ field }, index) => (field ? [[field.identifier, formatPath(['fields', index])] as const] : [])));
  ensureFieldReferences([...(await ownerRuleFields(change)), ...batch.map(ruleDataOf)], owner.kind, pathOf, 'fields');
  ensureCapacity(capacity.owner, { what: 'fields', limit: capacity.fields, current: await em.count(Field, change.scope), adding: batch.length });
  const addedViews = batch.reduce((sum, field) => sum + field.views.length, 0);
  ensureCapacity(capacity.owner, { what: 'field views', limit: capacity.views, current: await countViews(change), adding: addedViews });
  // One creation time for the whole batch: listings order by it, then by identifier, so a
  // batch always lists the same way instead of depending on which millisecond each row got.
  const createdAt = change.now;
  const created = batch.map(({ views, recipient, ...values }) => {
    const field = em.create(Field, { ...values, createdAt, ...ownerColumns(change.scope), ...fieldAssignee(recipient) });
    em.persist(field);
    writeViews(em, field, views);
    return { field, recipientId: recipient.id };
  });
  await em.flush();
  await owner.audit(context, change, 'field.added', {
    fields: created.map(({ field, recipientId }) => ({ fieldId: field.id, identifier: field.identifier, type: field.type, recipientId })),
    ...details,
  });
  return created;
}

/** Each field of a batch checked for its shape (`parseEachField`), for `addFieldsToOwner`. */
export function shapeFields(fields: unknown[]): ReturnType<typeof parseEachField> {
  return parseEachField(fields);
}

/**
 * Adds many fields to an owner in one request, all or nothing: if any field is wrong, none is
 * written and every problem is reported. Identifiers are unique within the owner. Idempotent per
 * `Idempotency-Key`.
 */
export async function createFields(context: ServiceContext, options: { owner: OwnerRef; input: unknown; idempotencyKey?: string }): Promise<FieldData[]> {
  const parsed = createFieldsInput.safeParse(options.input);
  if (!parsed.success) throw new InvalidRequestError(issuesFromZod(parsed.error));
  const shaped = parseEachField(parsed.data.fields);
  const owner = contentOwner(options.owner.kind);
  return createInOwner(
    owner,
    context,
    { ownerId: options.owner.id, idempotencyKey: options.idempotencyKey, creation: 'createFields', request: { input: options.input } },
    async (change) => {
      const created = await addFieldsToOwner(context, change, owner, { shaped, details: {} });
      // One idempotency record covers the whole batch: remember the ids as one list.
      return created.map(({ field }) => field.id).join(',');
    },
    async (reading, joinedIds) => {
      // Answered in the order the caller sent them.
      const fieldIds = joinedIds.split(',');
      const fields = await readFields(reading, { owner: options.owner, fieldIds });
      const byId = new Map(fields.map((field) => [field.id, field]));
      return fieldIds.map((id) => byId.get(id)).filter((field): field is FieldData => field !== undefined);
    },
  );
}

async function findField(change: OwnerChange, owner: OwnerRef, fieldId: string): Promise<Field> {
  if (!isUuid(fieldId)) throw new FieldNotFoundError(fieldId, owner.kind);
  const field = await change.em.findOne(Field, { id: fieldId, ...change.scope });
  if (!field) throw new FieldNotFoundError(fieldId, owner.kind);
  return field;
}

/**
 * Changes a field of an owner (docs/reference/contract.md §5): only given keys change, `views` replaces all views.
 * The whole result is checked as if the field were new, so a type change re-checks the value
 * against the new type: a pre-filled value that does not fit is refused, never silently dropped
 * (send a new `value`, or `null` to clear it). The config, whose shape is wholly type-specific,
 * starts from the new type's defaults unless a new one is given.
 */
export async function updateField(context: ServiceContext, options: { owner: OwnerRef; fieldId: string; input: unknown }): Promise<FieldData> {
  const parsed = updateFieldInput.safeParse(options.input);
  if (!parsed.success) throw new InvalidRequestError(issuesFromZod(parsed.error));
  const patch = parsed.data.field;
  const owner = contentOwner(options.owner.kind);
  await owner.change(context, options.owner.id, async (change) => {
    const { em } = change;
    const field = await findField(change, options.owner, options.fieldId);
    if (Object.keys(patch).length === 0) return;
    const currentViews = await em.find(FieldView, { field }, { orderBy: { position: 'asc' } });
    const currentRecipientId = field.recipient?.id ?? field.templateRecipient?.id ?? '';
    const checked = checkFieldPatch(field, { recipientId: currentRecipientId, views: currentViews }, patch, await loadTargets(change, owner));
    // Correcting a sent envelope: neither the field's recipient nor the one it moves to has acted.
    await ensureRecipientsOpen(change, [currentRecipientId, checked.recipient.id]);
    if (checked.identifier !== field.identifier) {
      const taken = await em.findOne(Field, { ...change.scope, identifier: checked.identifier }, { fields: ['id'] });
      if (taken) throw new FieldDuplicateIdentifierError([checked.identifier]);
    }
    const others = (await ownerRuleFields(change)).filter((other) => other.identifier !== field.identifier);
    ensureFieldReferences([...others, ruleDataOf(checked)], owner.kind, new Map([[checked.identifier, 'field']]), 'field');
    const { views, recipient, ...values } = checked;
    em.assign(field, { ...values, ...fieldAssignee(recipient) });
    if (patch.views !== undefined) {
      const others = (await countViews(change)) - currentViews.length;
      ensureCapacity(owner.capacity.owner, { what: 'field views', limit: owner.capacity.views, current: others, adding: views.length });
      await em.nativeDelete(FieldView, { field });
      writeViews(em, field, views);
    }
    await owner.audit(context, change, 'field.updated', { fieldId: field.id, changed: Object.keys(patch) });
  });
  return readField(context, options);
}

/** Removes a field (and its views) from an owner. */
export async function deleteField(context: ServiceContext, options: { owner: OwnerRef; fieldId: string }): Promise<void> {
  const owner = contentOwner(options.owner.kind);
  await owner.change(context, options.owner.id, async (change) => {
    const field = await findField(change, options.owner, options.fieldId);
    await ensureRecipientsOpen(change, [field.recipient?.id ?? '']);
    const remaining = (await ownerRuleFields(change)).filter((other) => other.identifier !== field.identifier);
    const namedBy = remaining.filter((other) => dependsOn(other, field.identifier)).map((other) => other.identifier);
    if (namedBy.length > 0) throw new FieldInUseError(field.identifier, namedBy, options.owner.kind);
    await change.em.nativeDelete(Field, { id: field.id, ...change.scope });
    await owner.audit(context, change, 'field.removed', { fieldId: field.id, identifier: field.identifier });
  });
}

function dependsOn(field: RuleFieldData, identifier: string): boolean {
  const conditions = [...(field.visibleWhen?.all ?? []), ...(field.visibleWhen?.any ?? [])];
  return conditions.some((condition) => condition.field === identifier) || (field.type === 'formula' && dependsOnThroughFormula(field, identifier));
}

function dependsOnThroughFormula(field: RuleFieldData, identifier: string | undefined): boolean {
  const parsed = parseExpression(field.config.expression);
  return identifier !== undefined && 'identifiers' in parsed && parsed.identifiers.includes(identifier);
}

/**
 * Refuses, with `Field.InUse`, removing fields (by id) that a field staying in the owner names in
 * its formula or conditions: removing a document takes the fields placed only on it along
 * (document.service.ts), and must not leave others naming nothing.
 */
export async function ensureFieldsNotNamed(change: OwnerChange, ownerKind: OwnerKind, removedIds: readonly string[]): Promise<void> {
  if (removedIds.length === 0) return;
  const removing = new Set(removedIds);
  const fields = await ownerRuleFields(change);
  const staying = fields.filter((field) => !removing.has(field.id!));
  for (const removed of fields.filter((field) => removing.has(field.id!))) {
    const namedBy = staying.filter((other) => dependsOn(other, removed.identifier)).map((other) => other.identifier);
    if (namedBy.length > 0) throw new FieldInUseError(removed.identifier, namedBy, ownerKind);
  }
}

/**
 * Refuses a change of a recipient's place in the signing order that would leave a condition naming
 * a field of a recipient who no longer signs earlier (issue 32): `Request.Invalid` at `path`, each
 * broken field named. Runs in the recipient's change, before it is written.
 */
export async function ensureRecipientOrderKeepsConditions(change: OwnerChange, ownerKind: OwnerKind, move: { recipientId: string; order: number; path: string }): Promise<void> {
  const { recipientId, order, path } = move;
  const fields = (await ownerRuleFields(change)).map((field) => (field.recipientId === recipientId ? { ...field, recipientOrder: order } : field));
  const problems = fieldReferenceProblems(fields, ownerKind, new Set()).filter((problem) => problem.message.includes('does not sign before'));
  if (problems.length === 0) return;
  throw new InvalidRequestError(problems.map((problem) => ({ path, message: `would break field "${problem.identifier}": its ${problem.at} ${problem.message}` })));
}

/** The ids of a recipient's fields, for `ensureFieldsNotNamed` before the recipient (and they) go. */
export async function fieldIdsOfRecipient(change: OwnerChange, recipientId: string): Promise<string[]> {
  return (await ownerRuleFields(change)).filter((field) => field.recipientId === recipientId).map((field) => field.id!);
}
