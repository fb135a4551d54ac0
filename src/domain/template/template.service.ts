import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { InvalidRequestError, type ValidationIssue } from '../../shared/errors.ts';
import { isUuid } from '../../shared/ids.ts';
import { MAX_TEMPLATE_TEAM_SCOPE } from '../capacity.ts';
import { auditChange, createIdempotently } from '../change.ts';
import type { ServiceContext } from '../service-context.ts';
import { Team } from '../team/team.entity.ts';
import type { TeamCaller } from '../team/team-caller.ts';
import { givenKeys, isStorableText, parseInput, readableName } from '../validation.ts';
import { findVisibleTemplate } from './team-template.ts';
import { Template } from './template.entity.ts';
import { TemplateNotOwnerError } from './template.errors.ts';
import { FULL_TEMPLATE_INCLUDE, readTemplate, type TemplateData } from './template.read.ts';

const MAX_DESCRIPTION_LENGTH = 2_000;

const templateSettings = {
  name: readableName(2, 48),
  description: z
    .string({ error: 'must be a text' })
    .max(MAX_DESCRIPTION_LENGTH, `must be at most ${MAX_DESCRIPTION_LENGTH} characters`)
    .refine(isStorableText, 'must not contain NUL characters or broken Unicode')
    .nullable(),
  teamScope: z.array(z.string({ error: 'must be a team id' })).max(MAX_TEMPLATE_TEAM_SCOPE, `at most ${MAX_TEMPLATE_TEAM_SCOPE} teams`),
};

export const createTemplateInput = z.strictObject({
  name: templateSettings.name,
  description: templateSettings.description.optional(),
  teamScope: templateSettings.teamScope.default([]),
});

export const updateTemplateInput = z.strictObject(templateSettings).partial();

/** A change to a template, made by its owning team under the template's row lock. */
export type TemplateChange = { em: EntityManager; template: Template; caller: TeamCaller; now: Date };

/**
 * A template the caller may change: visible (else `Template.NotFound`) and owned by the caller's
 * team. A team it is only shared with can see it, so it is told why (`Template.NotOwner`) rather
 * than told it does not exist.
 */
export async function findOwnTemplate(em: EntityManager, caller: TeamCaller, templateId: string, options: { lock?: boolean } = {}): Promise<Template> {
  const template = await findVisibleTemplate(em, caller, templateId, options.lock ? { lock: 'write' } : {});
  if (template.team.id !== caller.teamId) throw new TemplateNotOwnerError(template.id);
  return template;
}

/**
 * Runs a change to a template (its settings, documents, roles or fields) in one transaction that
 * holds the template's row lock, so changes of one template never interleave: capacity counts,
 * identifier checks and link checks see every earlier change. A jumpstart takes the same row with
 * a share lock, so it copies a template either wholly before or wholly after a change.
 */
export async function changeTemplate<T>(context: ServiceContext, templateId: string, change: (change: TemplateChange) => Promise<T>): Promise<T> {
  const caller = await context.caller();
  return context.em.transactional(async (em) => {
    const template = await findOwnTemplate(em, caller, templateId, { lock: true });
    return change({ em, template, caller, now: context.clock.now() });
  });
}

/** Appends a template change to the owning team's audit chain (templates have no chain of their own). */
export function auditTemplateChange(
  context: ServiceContext,
  change: Pick<TemplateChange, 'em' | 'caller' | 'now'> & { templateId: string },
  type: string,
  details: Record<string, unknown> = {},
) {
  return auditChange(context, change, { envelopeId: null, type, details: { templateId: change.templateId, ...details } });
}

/**
 * `teamScope` names other teams of the caller's workspace. An id that is malformed, unknown, or a
 * team of another workspace is refused alike (the answer never tells which), each at its index.
 * Ids are kept lower-case and once each, in the order given.
 */
async function checkTeamScope(em: EntityManager, caller: TeamCaller, teamScope: string[]): Promise<string[]> {
  const normalised = teamScope.map((id) => id.toLowerCase());
  const wellFormed = [...new Set(normalised.filter(isUuid))];
  const found = wellFormed.length === 0 ? [] : await em.find(Team, { id: { $in: wellFormed }, workspace: caller.workspaceId }, { fields: ['id'] });
  const known = new Set(found.map((team) => team.id));
  const issues: ValidationIssue[] = [];
  normalised.forEach((id, index) => {
    if (!known.has(id)) issues.push({ path: `teamScope[${index}]`, message: 'must be the id of a team of your workspace' });
  });
  if (issues.length > 0) throw new InvalidRequestError(issues);
  return [...new Set(normalised)];
}

/** Creates a template (docs/reference/interface-spec.md §4.7) owned by the caller's team. Idempotent per `Idempotency-Key`. */
export async function createTemplate(context: ServiceContext, options: { input: unknown; idempotencyKey?: string }): Promise<TemplateData> {
  const input = parseInput(createTemplateInput, options.input);
  return createIdempotently(
    context,
    { operation: 'createTemplate', input: options.input, idempotencyKey: options.idempotencyKey },
    async (change) => {
      const teamScope = await checkTeamScope(change.em, change.caller, input.teamScope);
      const template = change.em.create(Template, {
        team: change.em.getReference(Team, change.caller.teamId),
        name: input.name,
        description: input.description ?? null,
        teamScope,
        createdAt: change.now,
        updatedAt: change.now,
      });
      await change.em.persist(template).flush();
      await auditTemplateChange(context, { ...change, templateId: template.id }, 'template.created', { name: template.name, teamScope });
      return template.id;
    },
    (reading, templateId) => readTemplate(reading, templateId, FULL_TEMPLATE_INCLUDE),
  );
}

/** Changes a template's settings; only the given keys change. Owning team only. */
export async function updateTemplate(context: ServiceContext, options: { templateId: string; input: unknown }): Promise<void> {
  const input = parseInput(updateTemplateInput, options.input);
  await changeTemplate(context, options.templateId, async (change) => {
    const changed = givenKeys(input);
    if (changed.length === 0) return;
    const teamScope = input.teamScope === undefined ? undefined : await checkTeamScope(change.em, change.caller, input.teamScope);
    change.em.assign(change.template, {
      ...(input.name !== undefined ? { name: input.name } : {}),
      ...(input.description !== undefined ? { description: input.description } : {}),
      ...(teamScope !== undefined ? { teamScope } : {}),
    });
    await auditTemplateChange(context, { ...change, templateId: change.template.id }, 'template.updated', { changed });
  });
}

/**
 * Deletes a template with its documents, roles and fields (foreign-key cascades; docs/reference/interface-spec.md §4.7 rule
 * 1). Envelopes jumpstarted from it keep their own copies; their documents' stored originals are
 * shared by content hash and never removed with a template. Owning team only.
 */
export async function deleteTemplate(context: ServiceContext, options: { templateId: string }): Promise<void> {
  await changeTemplate(context, options.templateId, async (change) => {
    await auditTemplateChange(context, { ...change, templateId: change.template.id }, 'template.deleted', { name: change.template.name });
    await change.em.nativeDelete(Template, { id: change.template.id, team: change.caller.teamId });
  });
}
