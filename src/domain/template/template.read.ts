import { sql, type ExpressionBuilder } from 'kysely';
import { jsonArrayFrom } from 'kysely/helpers/postgres';
import { isUuid } from '../../shared/ids.ts';
import { DocumentNotFoundError } from '../document/document.errors.ts';
import {
  documentColumns,
  fieldColumns,
  pick,
  type Column,
  type DocumentData,
  type FieldData,
  type Keys,
} from '../envelope/envelope.read.ts';
import { FieldNotFoundError } from '../field/field.errors.ts';
import { decodeCursorPosition, keysetPageInput, takePage } from '../pagination.ts';
import { isoTimestamp, readOwnerChild, readOwnerChildItem, runRead, shapeOfKeys, type ReadDatabase, type Slot } from '../read-model.ts';
import { RecipientNotFoundError } from '../recipient/recipient.errors.ts';
import type { ServiceContext } from '../service-context.ts';
import { parseInput } from '../validation.ts';
import { TemplateNotFoundError } from './template.errors.ts';
import { visibleTemplates, wellFormedTemplateId } from './team-template.ts';

/*
 * The template aggregate's read model: a template with any of its documents, roles and fields
 * (with views), each read with ONE statement whatever is nested, in the faces' shape. Documents
 * and fields have the envelope's shape (the same columns, read by the same selections).
 */

export type TemplateRecipientData = {
  id: string;
  identifier: string;
  roleName: string;
  type: string;
  order: number;
  required: boolean;
  color: string;
  hostedById: string | null;
  delegatedById: string | null;
  /** A fixed role always gets its pre-assigned person at jumpstart; a variable one may be given others. */
  fixed: boolean;
  /** The pre-assigned person: at most one of these is set. */
  userId: string | null;
  contactId: string | null;
  contactGroupId: string | null;
  createdAt: string;
};

export type TemplateData = {
  id: string;
  name: string;
  description: string | null;
  teamScope: string[];
  /** The owning team: the only one that may change the template. */
  teamId: string;
  createdAt: string;
  updatedAt: string;
  /** Each nested list is present exactly when the include asked for it. */
  documents?: DocumentData[];
  recipients?: TemplateRecipientData[];
  fields?: FieldData[];
};

/** What to nest in a template read; `keys` prunes the columns of each kind of object (GraphQL's selection). */
export type TemplateInclude = {
  documents?: boolean;
  recipients?: boolean;
  fields?: boolean;
  views?: boolean;
  keys?: Partial<Record<'template' | 'document' | 'recipient' | 'field', ReadonlySet<string>>>;
};

/** Everything nested: what REST answers. */
export const FULL_TEMPLATE_INCLUDE: TemplateInclude = { documents: true, recipients: true, fields: true, views: true };

type TemplateDb = ReadDatabase & { t: ReadDatabase['template'] };
type Eb = ExpressionBuilder<TemplateDb, 't'>;
type AnyEb = ExpressionBuilder<any, any>;

// ---------------------------------------------------------------------------------------------
// Selections.

function documentsOf(eb: AnyEb, templateId: string, keys: Keys) {
  return jsonArrayFrom(
    eb
      .selectFrom('document as d')
      .select((inner: AnyEb) => documentColumns(inner, 'd', keys))
      .whereRef('d.template_id', '=', templateId)
      .orderBy('d.order')
      .orderBy('d.created_at')
      .orderBy('d.id'),
  );
}

function templateRecipientColumns(eb: AnyEb, alias: string, keys: Keys) {
  const column = (name: string) => () => eb.ref(`${alias}.${name}`);
  return pick(
    [
      ['id', column('id')],
      ['identifier', column('identifier')],
      ['roleName', column('role_name')],
      ['type', column('type')],
      ['order', column('order')],
      ['required', column('required')],
      ['color', column('color')],
      ['hostedById', column('hosted_by_id')],
      ['delegatedById', column('delegated_by_id')],
      ['fixed', column('fixed')],
      ['userId', column('user_id')],
      ['contactId', column('contact_id')],
      ['contactGroupId', column('contact_group_id')],
      ['createdAt', () => isoTimestamp(eb.ref(`${alias}.created_at`))],
    ],
    keys,
  );
}

function recipientsOf(eb: AnyEb, templateId: string, keys: Keys) {
  return jsonArrayFrom(
    eb
      .selectFrom('template_recipient as tr')
      .select((inner: AnyEb) => templateRecipientColumns(inner, 'tr', keys))
      .whereRef('tr.template_id', '=', templateId)
      .orderBy('tr.order')
      .orderBy('tr.created_at')
      .orderBy('tr.id'),
  );
}

function fieldsOf(eb: AnyEb, templateId: string, include: Pick<TemplateInclude, 'views'>, keys: Keys) {
  return jsonArrayFrom(
    eb
      .selectFrom('field as f')
      .select((inner: AnyEb) => fieldColumns(inner, 'f', include, keys, 'template_recipient_id'))
      .whereRef('f.template_id', '=', templateId)
      .orderBy('f.created_at')
      .orderBy('f.identifier'),
  );
}

function templateColumns(eb: Eb, include: TemplateInclude) {
  const column = (name: keyof ReadDatabase['template']) => () => eb.ref(`t.${name}`);
  const keys = include.keys ?? {};
  const nested: Column[] = [];
  if (include.documents) nested.push(['documents', () => documentsOf(eb, 't.id', keys.document)]);
  if (include.recipients) nested.push(['recipients', () => recipientsOf(eb, 't.id', keys.recipient)]);
  if (include.fields) nested.push(['fields', () => fieldsOf(eb, 't.id', include, keys.field)]);
  return pick(
    [
      ['id', column('id')],
      ['name', column('name')],
      ['description', column('description')],
      ['teamScope', () => sql<string[]>`to_json(${eb.ref('t.team_scope')})`],
      ['teamId', column('team_id')],
      ['createdAt', () => isoTimestamp(eb.ref('t.created_at'))],
      ['updatedAt', () => isoTimestamp(eb.ref('t.updated_at'))],
    ],
    keys.template,
    // A page's cursor is made of these.
    ['id', 'createdAt'],
  ).concat(nested.map(([key, build]) => build().as(key)));
}

// ---------------------------------------------------------------------------------------------
// The tenant boundary of every template read, in one place.


function shapeOfInclude(include: TemplateInclude): string {
  const flags = (['documents', 'recipients', 'fields', 'views'] as const).map((flag) => (include[flag] ? '1' : '0')).join('');
  const keys = include.keys ?? {};
  return `${flags}|${(['template', 'document', 'recipient', 'field'] as const).map((kind) => shapeOfKeys(keys[kind])).join('|')}`;
}

// ---------------------------------------------------------------------------------------------
// Reads. Each is one statement, compiled once per shape (runRead): values go in slots.

/** One template visible to the caller's team with what `include` asks for; `Template.NotFound` otherwise. */
export async function readTemplate(context: ServiceContext, templateId: string, include: TemplateInclude = {}): Promise<TemplateData> {
  const caller = await context.caller();
  wellFormedTemplateId(templateId);
  const [row] = await runRead<TemplateData>(
    context.reader,
    `template:${shapeOfInclude(include)}`,
    (db, slot) =>
      visibleTemplates(db, slot(0))
        .select((eb) => templateColumns(eb, include))
        .where('t.id', '=', slot(1)),
    [caller.teamId, templateId],
  );
  if (!row) throw new TemplateNotFoundError(templateId);
  return row;
}

const pageInput = keysetPageInput.omit({ search: true });

export type TemplatePageData = { templates: TemplateData[]; nextCursor: string | null };

/**
 * The templates the caller's team may use (its own and those shared with it), newest first,
 * keyset-paginated on (createdAt, id) like every listing.
 */
export async function readTemplatePage(
  context: ServiceContext,
  options: { limit?: number; cursor?: string },
  include: TemplateInclude = {},
): Promise<TemplatePageData> {
  const input = parseInput(pageInput, options);
  const caller = await context.caller();
  const after = input.cursor === undefined ? undefined : decodeCursorPosition(input.cursor);
  const rows = await runRead<TemplateData>(
    context.reader,
    `template-page:${after ? 'after' : 'first'}:${shapeOfInclude(include)}`,
    (db, slot) => {
      let query = visibleTemplates(db, slot(0)).select((eb) => templateColumns(eb, include));
      if (after) query = query.where((eb) => eb(eb.refTuple('t.created_at', 't.id'), '<', eb.tuple(slot(1), slot(2))));
      return query.orderBy('t.created_at', 'desc').orderBy('t.id', 'desc').limit(slot(3));
    },
    [caller.teamId, after?.createdAt, after?.id, input.limit + 1],
  );
  const page = takePage(rows, input.limit);
  return { templates: page.rows, nextCursor: page.nextCursor };
}

/**
 * One child list of a visible template in one statement: the template row decides
 * `Template.NotFound`, the child column the rest. The child's own values go in slots from 2 on.
 */
function readInTemplate<T>(
  context: ServiceContext,
  templateId: string,
  shape: string,
  child: (eb: Eb, slot: Slot) => ReturnType<typeof jsonArrayFrom>,
  childValues: readonly unknown[] = [],
): Promise<T> {
  return readOwnerChild<T>(context, {
    shape: `in-template:${shape}`,
    ownerId: templateId,
    notFound: () => new TemplateNotFoundError(templateId),
    build: (db, slot) =>
      visibleTemplates(db, slot(0))
        .select((eb) => child(eb, slot).as('child'))
        .where('t.id', '=', slot(1)),
    childValues,
  });
}

function readOneInTemplate<T>(
  context: ServiceContext,
  templateId: string,
  itemId: string,
  shape: string,
  child: (eb: Eb, itemId: string) => ReturnType<typeof jsonArrayFrom>,
  notFound: () => Error,
): Promise<T> {
  return readOwnerChildItem<T>(itemId, (itemIdValue) => readInTemplate<T[]>(context, templateId, shape, (eb, slot) => child(eb, slot(2)), [itemIdValue]), notFound);
}

export function readTemplateDocument(context: ServiceContext, options: { templateId: string; documentId: string }): Promise<DocumentData> {
  return readOneInTemplate(
    context,
    options.templateId,
    options.documentId,
    'document',
    (eb, documentId) =>
      jsonArrayFrom(
        eb
          .selectFrom('document as d')
          .select((inner: AnyEb) => documentColumns(inner, 'd', undefined))
          .whereRef('d.template_id', '=', 't.id')
          .where('d.id', '=', documentId),
      ),
    () => new DocumentNotFoundError(options.documentId, 'template'),
  );
}

export function readTemplateRecipient(context: ServiceContext, options: { templateId: string; recipientId: string }): Promise<TemplateRecipientData> {
  return readOneInTemplate(
    context,
    options.templateId,
    options.recipientId,
    'recipient',
    (eb, recipientId) =>
      jsonArrayFrom(
        eb
          .selectFrom('template_recipient as tr')
          .select((inner: AnyEb) => templateRecipientColumns(inner, 'tr', undefined))
          .whereRef('tr.template_id', '=', 't.id')
          .where('tr.id', '=', recipientId),
      ),
    () => new RecipientNotFoundError(options.recipientId, 'template'),
  );
}

/** Fields of a visible template by id (in listing order), e.g. the ones just created. */
export function readTemplateFields(context: ServiceContext, options: { templateId: string; fieldIds: string[] }): Promise<FieldData[]> {
  return readInTemplate(
    context,
    options.templateId,
    'fields-by-id',
    (eb, slot) =>
      jsonArrayFrom(
        eb
          .selectFrom('field as f')
          .select((inner: AnyEb) => fieldColumns(inner, 'f', { views: true }, undefined, 'template_recipient_id'))
          .whereRef('f.template_id', '=', 't.id')
          .where(sql<boolean>`f.id = any(${slot(2)}::uuid[])`)
          .orderBy('f.created_at')
          .orderBy('f.identifier'),
      ),
    [options.fieldIds.filter(isUuid)],
  );
}

export function readTemplateField(context: ServiceContext, options: { templateId: string; fieldId: string }): Promise<FieldData> {
  return readOneInTemplate(
    context,
    options.templateId,
    options.fieldId,
    'field',
    (eb, fieldId) =>
      jsonArrayFrom(
        eb
          .selectFrom('field as f')
          .select((inner: AnyEb) => fieldColumns(inner, 'f', { views: true }, undefined, 'template_recipient_id'))
          .whereRef('f.template_id', '=', 't.id')
          .where('f.id', '=', fieldId),
      ),
    () => new FieldNotFoundError(options.fieldId, 'template'),
  );
}
