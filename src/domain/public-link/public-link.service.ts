import { z } from 'zod';
import { InvalidRequestError, type ValidationIssue } from '../../shared/errors.ts';
import { newId, newSecret } from '../../shared/ids.ts';
import { isReturnUrl } from '../../shared/web-origin.ts';
import { auditChange, type ChangeScope, createIdempotently } from '../change.ts';
import type { FieldType } from '../field/field.entity.ts';
import { parseFieldValue } from '../field/field-values.ts';
import { mergeDataIssues, mergeDataSchema, missingDataSchema, planMerge, templateDataTags } from '../jumpstart/data-merge.ts';
import { loadTemplateContent, readinessIssues, type TemplateContent } from '../jumpstart/jumpstart.service.ts';
import type { ServiceContext } from '../service-context.ts';
import { SIGNING_TYPES } from '../signing/workflow.ts';
import { findVisibleTemplate } from '../template/team-template.ts';
import { TemplateNotReadyError } from '../template/template.errors.ts';
import { boundedText, parseInput } from '../validation.ts';
import { PublicLinkNotFoundError, PublicLinkRoleNotUsableError } from './public-link.errors.ts';
import { type PublicLinkData, readPublicLink } from './public-link.read.ts';
import { teamPublicLinkRow, wellFormedPublicLinkId } from './team-public-link.ts';

/*
 * Public links (issue 36), the team's side: make, change and delete links. Each write is one
 * guarded statement scoped to the caller's team (another team's id reads as unknown) with its
 * team audit event; answers come from the read model. The visitor's side is visit.service.ts.
 */

/** The most uses a link may allow; a link without `maxUses` has no limit. */
export const MAX_PUBLIC_LINK_USES = 1_000_000;

/** The most prefilled values a link carries (a template has at most this many fields). */
export const MAX_PREFILL_VALUES = 1_000;

const instant = z.iso.datetime({ offset: true, error: 'must be an ISO 8601 date-time with a time zone (2026-01-31T00:00:00Z)' });
const maxUses = z.number({ error: 'must be a whole number' }).int('must be a whole number').min(1, 'must be at least 1').max(MAX_PUBLIC_LINK_USES, `must be at most ${MAX_PUBLIC_LINK_USES}`);

export const createPublicLinkInput = z.strictObject({
  role: z.string({ error: 'must be a role identifier of the template' }).min(1, 'must not be empty').max(64, 'must be at most 64 characters'),
  name: boundedText(1, 200).optional(),
  maxUses: maxUses.optional(),
  expiresAt: instant.optional(),
  verifyEmail: z.boolean({ error: 'must be true or false' }).default(true),
  redirectUrl: z
    .string()
    .max(2000, 'must be at most 2000 characters')
    .refine(isReturnUrl, 'must be an absolute https URL (http only on localhost), without credentials or #fragment')
    .optional(),
  prefill: z
    .record(z.string().max(64, 'must be a field identifier'), z.unknown(), { error: 'must be an object of field identifier → value' })
    .refine((values) => Object.keys(values).length <= MAX_PREFILL_VALUES, `must have at most ${MAX_PREFILL_VALUES} values`)
    .optional(),
  /** Values for the template's data tags (README "Data merge"), merged into every envelope the link makes. */
  data: mergeDataSchema.optional(),
  missingData: missingDataSchema,
});

export const updatePublicLinkInput = z.strictObject({
  status: z.enum(['active', 'disabled'], { error: 'must be active or disabled' }).optional(),
  name: boundedText(1, 200).nullable().optional(),
  maxUses: maxUses.nullable().optional(),
  expiresAt: instant.nullable().optional(),
});

const SIGNATURE_TYPES: readonly FieldType[] = ['simple_signature', 'biometric_signature'];

/**
 * The role a visitor becomes must be one of the template's, not fixed, a signer or delegator, and
 * act in the template's first turn (the visitor goes on to sign at once). Every other role needs
 * the template's person (jumpstart semantics: nobody else is asked for); checked again, as part
 * of the send, each time the link is used.
 */
function checkRole(content: TemplateContent, role: string): void {
  const found = content.roles.find((candidate) => candidate.identifier === role);
  if (!found) throw new PublicLinkRoleNotUsableError(role, 'unknown');
  if (found.fixed) throw new PublicLinkRoleNotUsableError(role, 'fixed');
  if (found.type !== 'signer' && found.type !== 'delegator') throw new PublicLinkRoleNotUsableError(role, 'type');
  const acting = content.roles.filter((candidate) => SIGNING_TYPES.includes(candidate.type) || candidate.type === 'approver');
  const firstOrder = Math.min(...acting.map((candidate) => candidate.order));
  if (found.order !== firstOrder) throw new PublicLinkRoleNotUsableError(role, 'not_first');
  const issues: ValidationIssue[] = content.roles
    .filter((candidate) => candidate.identifier !== role && candidate.user == null && candidate.contact == null && candidate.contactGroup == null)
    .map((candidate) => ({ path: 'role', message: `the template gives role "${candidate.identifier}" nobody; a public link fills only its own role` }));
  if (issues.length > 0) throw new InvalidRequestError(issues);
}

/** Prefilled values: fields of the template, each valid for its type and config; never a signature. */
function checkPrefill(content: TemplateContent, prefill: Record<string, unknown>): Record<string, Record<string, unknown>> {
  const fields = new Map(content.fields.map((field) => [field.identifier, field]));
  const issues: ValidationIssue[] = [];
  const values: Record<string, Record<string, unknown>> = {};
  for (const [identifier, value] of Object.entries(prefill)) {
    const path = `prefill.${identifier}`;
    const field = fields.get(identifier);
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
    // Own properties only: a key such as __proto__ is data here, never the object's prototype.
    if (checked.value !== null) Object.defineProperty(values, identifier, { value: checked.value, enumerable: true, writable: true, configurable: true });
  }
  if (issues.length > 0) throw new InvalidRequestError(issues);
  return values;
}

/**
 * Makes a link to a template the caller's team may use, for one of its roles: checked now against
 * the template as it is (ready, the role usable, the prefill valid). The slug is 256 random bits
 * (`newSecret`), the id never appears in the link. Idempotent per `Idempotency-Key`.
 */
export async function createPublicLink(context: ServiceContext, options: { templateId: string; input: unknown; idempotencyKey?: string }): Promise<PublicLinkData> {
  const input = parseInput(createPublicLinkInput, options.input);
  if (input.expiresAt !== undefined && Date.parse(input.expiresAt) <= context.clock.now().getTime()) {
    throw new InvalidRequestError([{ path: 'expiresAt', message: 'must be in the future' }]);
  }
  // The template's data tags, read in a PDF worker before the transaction; `data` must fill them
  // now (every missing path listed), as each envelope made through the link will.
  // A refusal waits for the idempotency check, so that a repeat answers its first answer.
  const data = input.data as Record<string, unknown> | undefined;
  let dataRefusal: { error: unknown } | undefined;
  try {
    const dataTags = await templateDataTags(context, context.em.fork(), await context.caller(), options.templateId);
    if (data !== undefined || dataTags.length > 0) {
      const bounds = mergeDataIssues(data ?? {}, 'data');
      const issues = bounds.length > 0 ? bounds : planMerge(dataTags, data ?? {}, input.missingData).issues;
      if (issues.length > 0) throw new InvalidRequestError(issues);
    }
  } catch (error) {
    if (options.idempotencyKey === undefined) throw error;
    dataRefusal = { error };
  }
  return createIdempotently(
    context,
    { operation: 'createPublicLink', input: { templateId: options.templateId.toLowerCase(), ...(options.input as object) }, idempotencyKey: options.idempotencyKey },
    async ({ em, caller, now }: ChangeScope) => {
      if (dataRefusal !== undefined) throw dataRefusal.error;
      const template = await findVisibleTemplate(em, caller, options.templateId, { lock: 'share' });
      const content = await loadTemplateContent(em, template);
      const issues = readinessIssues(content);
      if (issues.length > 0) throw new TemplateNotReadyError(template.id, issues);
      checkRole(content, input.role);
      // The body's own keys, as the caller sent them: a parsed record drops `__proto__` silently,
      // and a key naming no field must be refused, not lost.
      const given = (options.input as { prefill?: Record<string, unknown> }).prefill;
      const prefill = checkPrefill(content, input.prefill === undefined || given === null || typeof given !== 'object' ? {} : given);
      const id = newId();
      // The slug is URL-safe random text: newSecret's 256 bits, without its prefix.
      const slug = newSecret('pl').slice(3, 3 + 43);
      await em.execute(
        `insert into public_link (id, created_at, updated_at, team_id, template_id, role, name, slug, verify_email, max_uses, uses, expires_at, disabled_at, redirect_url, prefill, data, missing_data, api_key_id, workspace_id)
         values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, null, ?, ?::jsonb, ?::jsonb, ?, ?, ?)`,
        [
          id,
          now,
          now,
          caller.teamId,
          template.id,
          input.role,
          input.name ?? null,
          slug,
          input.verifyEmail,
          input.maxUses ?? null,
          input.expiresAt ?? null,
          input.redirectUrl ?? null,
          JSON.stringify(prefill),
          data === undefined ? null : JSON.stringify(data),
          input.missingData,
          caller.apiKeyId,
          caller.workspaceId,
        ],
      );
      await auditChange(
        context,
        { em, caller, now },
        {
          envelopeId: null,
          type: 'public_link.created',
          details: { publicLinkId: id, templateId: template.id, role: input.role, maxUses: input.maxUses ?? null, expiresAt: input.expiresAt ?? null, verifyEmail: input.verifyEmail },
        },
      );
      return id;
    },
    readPublicLink,
  );
}

/**
 * Changes a link with one guarded statement: `status` disables or re-enables it, `maxUses`,
 * `expiresAt` and `name` replace (null clears). A `maxUses` below the uses already made is refused
 * (`Request.Invalid`), in the same statement, so a visitor racing the change cannot slip past it.
 */
export async function updatePublicLink(context: ServiceContext, options: { publicLinkId: string; input: unknown }): Promise<PublicLinkData> {
  const input = parseInput(updatePublicLinkInput, options.input);
  const caller = await context.caller();
  wellFormedPublicLinkId(options.publicLinkId);
  const now = context.clock.now();
  const sets: string[] = ['updated_at = ?'];
  const values: unknown[] = [now];
  if (input.status !== undefined) {
    // Disabling keeps the first disabling time; enabling clears it.
    sets.push(input.status === 'disabled' ? 'disabled_at = coalesce(l.disabled_at, ?)' : 'disabled_at = null');
    if (input.status === 'disabled') values.push(now);
  }
  if (input.name !== undefined) sets.push('name = ?'), values.push(input.name);
  if (input.maxUses !== undefined) sets.push('max_uses = ?'), values.push(input.maxUses);
  if (input.expiresAt !== undefined) sets.push('expires_at = ?'), values.push(input.expiresAt);
  await context.em.transactional(async (em) => {
    const row = teamPublicLinkRow('l', caller.teamId, options.publicLinkId);
    const guard = input.maxUses === undefined || input.maxUses === null ? '' : ' and l.uses <= ?';
    const rows = await em.execute<{ id: string }[]>(`update public_link l set ${sets.join(', ')} where ${row.sql}${guard} returning l.id`, [
      ...values,
      ...row.parameters,
      ...(guard ? [input.maxUses] : []),
    ]);
    if (rows.length === 0) {
      const [found] = await em.execute<{ uses: number }[]>(`select l.uses from public_link l where ${row.sql}`, row.parameters);
      if (!found) throw new PublicLinkNotFoundError(options.publicLinkId);
      throw new InvalidRequestError([{ path: 'maxUses', message: `must be at least the ${found.uses} use(s) already made` }]);
    }
    const changed = Object.keys(input).filter((key) => (input as Record<string, unknown>)[key] !== undefined);
    await auditChange(context, { em, caller, now }, { envelopeId: null, type: 'public_link.updated', details: { publicLinkId: options.publicLinkId, changed, ...input } });
  });
  return readPublicLink(context, options.publicLinkId);
}

/** Deletes a link: its page answers like an unknown link's from now on; its envelopes keep `publicLinkId`. */
export async function deletePublicLink(context: ServiceContext, options: { publicLinkId: string }): Promise<void> {
  const caller = await context.caller();
  wellFormedPublicLinkId(options.publicLinkId);
  await context.em.transactional(async (em) => {
    const row = teamPublicLinkRow('l', caller.teamId, options.publicLinkId);
    const rows = await em.execute<{ id: string; uses: number }[]>(`delete from public_link l where ${row.sql} returning l.id, l.uses`, row.parameters);
    if (rows.length === 0) throw new PublicLinkNotFoundError(options.publicLinkId);
    await auditChange(
      context,
      { em, caller, now: context.clock.now() },
      { envelopeId: null, type: 'public_link.deleted', details: { publicLinkId: options.publicLinkId, uses: rows[0]!.uses } },
    );
  });
}
