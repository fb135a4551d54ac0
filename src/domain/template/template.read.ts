import { type ExpressionBuilder, sql } from 'kysely';
import { type Column, type DocumentData, documentsOf, type FieldData, fieldsOf, pick, recipientsOf, type TemplateRecipientData } from '../owner/owner.read.ts';
import { keysetPageInput } from '../pagination.ts';
import { isoTimestamp, type ReadDatabase, type RootStatement, readKeysetPage, readRoot, shapeOfKeys } from '../read-model.ts';
import type { ServiceContext } from '../service-context.ts';
import { parseInput } from '../validation.ts';
import { templateIdGate, visibleTemplates } from './team-template.ts';

/*
 * The template aggregate's read model: a template with any of its documents, roles and fields
 * (with views), each read with ONE statement whatever is nested, in the faces' shape. Documents,
 * roles and fields are read by the owner selections an envelope's are (owner/owner.read.ts).
 */

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

type Eb = ExpressionBuilder<ReadDatabase & { t: ReadDatabase['template'] }, 't'>;

// ---------------------------------------------------------------------------------------------
// Selections: the template's own columns; documents, roles and fields are the owner selections.

function templateColumns(eb: Eb, include: TemplateInclude) {
  const column = (name: keyof ReadDatabase['template']) => () => eb.ref(`t.${name}`);
  const keys = include.keys ?? {};
  const nested: Column[] = [];
  if (include.documents) nested.push(['documents', () => documentsOf(eb, { kind: 'template', ownerId: 't.id' }, { keys: keys.document })]);
  if (include.recipients) nested.push(['recipients', () => recipientsOf(eb, { kind: 'template', ownerId: 't.id' }, { include: {}, keys: keys.recipient })]);
  if (include.fields) nested.push(['fields', () => fieldsOf(eb, { kind: 'template', ownerId: 't.id' }, { include, keys: keys.field })]);
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

function shapeOfInclude(include: TemplateInclude): string {
  const flags = (['documents', 'recipients', 'fields', 'views'] as const).map((flag) => (include[flag] ? '1' : '0')).join('');
  const keys = include.keys ?? {};
  return `${flags}|${(['template', 'document', 'recipient', 'field'] as const).map((kind) => shapeOfKeys(keys[kind])).join('|')}`;
}

// ---------------------------------------------------------------------------------------------
// Reads. Each is one statement, compiled once per shape (runRead): values go in slots.

/** One template visible to the caller's team with what `include` asks for; `Template.NotFound` otherwise. */
export function readTemplate(context: ServiceContext, templateId: string, include: TemplateInclude = {}): Promise<TemplateData> {
  const build: RootStatement = (db, slot) =>
    visibleTemplates(db, slot(0))
      .select((eb) => templateColumns(eb, include))
      .where('t.id', '=', slot(1));
  return readRoot<TemplateData>(context, templateIdGate, { shape: `template:${shapeOfInclude(include)}`, id: templateId, build });
}

const pageInput = keysetPageInput.omit({ search: true });

export type TemplatePageData = { templates: TemplateData[]; nextCursor: string | null };

/**
 * The templates the caller's team may use (its own and those shared with it), newest first,
 * keyset-paginated on (createdAt, id) like every listing.
 */
export async function readTemplatePage(context: ServiceContext, options: { limit?: number; cursor?: string }, include: TemplateInclude = {}): Promise<TemplatePageData> {
  const input = parseInput(pageInput, options);
  const page = await readKeysetPage<TemplateData>(context, {
    shape: `template-page:${shapeOfInclude(include)}`,
    page: input,
    build: (db, slot, window) =>
      window(
        visibleTemplates(db, slot(0)).select((eb) => templateColumns(eb, include)),
        't',
      ),
  });
  return { templates: page.rows, nextCursor: page.nextCursor };
}
