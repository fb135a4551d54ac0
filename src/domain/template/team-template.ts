/*
 * The tenant gate of templates, in one place: a template is visible to its own team and to the
 * teams its `teamScope` names. Unknown, malformed and invisible ids all give the same
 * `Template.NotFound`. Reads start from `visibleTemplates`, writes from `findVisibleTemplate`;
 * both take the id through `wellFormedTemplateId` first.
 */
import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { type SelectQueryBuilder, sql } from 'kysely';
import type { IdGate, ReadDatabase, ReadDb } from '../read-model.ts';
import type { TeamCaller } from '../team/team-caller.ts';
import { wellFormedId } from '../tenant.ts';
import { Template } from './template.entity.ts';
import { TemplateNotFoundError } from './template.errors.ts';

export type TemplateDb = ReadDatabase & { t: ReadDatabase['template'] };

/** The id, or `Template.NotFound` when it cannot name a template. */
export function wellFormedTemplateId(templateId: string): string {
  return wellFormedId(templateId, (id) => new TemplateNotFoundError(id));
}

/** The id rules of templates, for reads through `readRoot`. */
export const templateIdGate: IdGate = { wellFormed: wellFormedTemplateId, notFound: (id) => new TemplateNotFoundError(id) };

/**
 * The templates the caller's team may see, as `t`: its own, and those whose `teamScope` names it
 * (teamScope only ever holds teams of the owner's workspace: the service checks it on every
 * write). Every read of a template or of anything inside one starts here, so any other template
 * reads as "no row" and becomes the same `Template.NotFound` as an unknown id. `teamId` is the
 * statement's slot for the caller's team. The scope test is written as array containment so the
 * GIN index on `team_scope` serves it.
 */
export function visibleTemplates(db: ReadDb, teamId: unknown): SelectQueryBuilder<TemplateDb, 't', {}> {
  return db.selectFrom('template as t').where((eb) => eb.or([eb('t.team_id', '=', teamId as string), sql<boolean>`t.team_scope @> array[${teamId}]::text[]`]));
}

/**
 * The tenant boundary for templates in writes, in one place: a template is visible to its own
 * team and to the teams its `teamScope` names. Unknown, malformed and invisible ids all give the
 * same `Template.NotFound`. The visibility test is in the statement, so another team's template
 * is never locked or loaded.
 */
export async function findVisibleTemplate(em: EntityManager, caller: TeamCaller, templateId: string, options: { lock?: 'share' | 'write' } = {}): Promise<Template> {
  const lockMode = options.lock === 'write' ? LockMode.PESSIMISTIC_WRITE : options.lock === 'share' ? LockMode.PESSIMISTIC_READ : undefined;
  const template = await em.findOne(
    Template,
    { id: wellFormedTemplateId(templateId), $or: [{ team: caller.teamId }, { teamScope: { $contains: [caller.teamId] } }] },
    lockMode === undefined ? {} : { lockMode },
  );
  if (!template) throw new TemplateNotFoundError(templateId);
  return template;
}
