import { createHmac, randomInt, timingSafeEqual } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { hashSecret, newId, newSecret } from '../../shared/ids.ts';
import { mergeTemplateData } from '../jumpstart/data-merge.ts';
import { copyTemplate, jumpstartInput } from '../jumpstart/jumpstart.service.ts';
import { OTP_POLICY } from '../notification/otp-policy.ts';
import { enqueue } from '../outbox/outbox.ts';
import { OUTBOX_TOPICS } from '../outbox/topics.ts';
import { locales } from '../recipient/agent.entity.ts';
import { e164Phone } from '../recipient/agent-input.ts';
import type { ServiceContext } from '../service-context.ts';
import { normalizeOtpInput } from '../signing/otp.service.ts';
import { sendDraft } from '../signing/send.service.ts';
import { SigningOtpAlreadyUsedError, SigningOtpAttemptsExhaustedError, SigningOtpExpiredError, SigningOtpInvalidError, SigningOtpRateLimitedError } from '../signing/signing.errors.ts';
import { SigningUrl } from '../signing/signing-url.entity.ts';
import { SIGNING_URL_MINUTES } from '../signing/signing-url.service.ts';
import { recordEvent, signingLink, type Workflow } from '../signing/workflow.ts';
import type { TeamCaller } from '../team/team-caller.ts';
import { parseInput, readableName } from '../validation.ts';
import { PublicLinkExhaustedError, PublicLinkExpiredError, PublicLinkUnavailableError, PublicLinkVisitNotFoundError } from './public-link.errors.ts';

/*
 * Public links (issue 36), the visitor's side: the page's state, the visitor's details, the code
 * mailed to them (the one-time-code rules of the signing page: OTP_POLICY's digits, lifetime,
 * tries and resend intervals, normalizeOtpInput), and the envelope made once the code is entered
 * (or at once, without `verifyEmail`). Nothing but the visit row exists before then, so a visitor
 * who never enters the code leaves no envelope, use or mail beyond the code's.
 *
 * The envelope is made and sent in ONE transaction that starts with the guarded update
 * `uses < max_uses` of the link's row: of any number of racing visitors exactly `maxUses` get
 * through, the others roll back with nothing made and see the exhausted page.
 */

/** A link as its page needs it, by slug. */
type LinkRow = {
  id: string;
  team_id: string;
  workspace_id: string;
  api_key_id: string;
  template_id: string;
  role: string;
  form_name: string;
  role_name: string | null;
  verify_email: boolean;
  redirect_url: string | null;
  prefill: Record<string, Record<string, unknown>>;
  data: Record<string, unknown> | null;
  missing_data: 'refuse' | 'blank';
  needs_phone: boolean;
  disabled_at: Date | null;
  expires_at: Date | null;
  max_uses: number | null;
  uses: number;
};

export type OpenPublicLink = { id: string; formName: string; roleName: string | null; verifyEmail: boolean; needsPhone: boolean };

/** What `/f/<slug>` shows: the form, or why not. Unknown and disabled are one state, on purpose (no oracle). */
export type PublicLinkState = { kind: 'open'; link: OpenPublicLink } | { kind: 'unavailable' } | { kind: 'expired' } | { kind: 'exhausted' };

/*
 * One statement whatever the slug: an unknown and a disabled slug cost the same index probe and
 * get the same answer. The role's template person having a phone means the template's author
 * reaches that role by phone: the visitor is asked for one, and the signing page then asks for a
 * texted code as for any signer with a phone.
 */
const LINK_BY_SLUG = `select l.id, l.team_id, l.workspace_id, l.api_key_id, l.template_id, l.role, coalesce(l.name, t.name) as form_name, tr.role_name,
    l.verify_email, l.redirect_url, l.prefill, l.data, l.missing_data, l.disabled_at, l.expires_at, l.max_uses, l.uses,
    coalesce((select c.phone is not null from contact c where c.id = tr.contact_id), (select u.phone is not null from team_user u where u.id = tr.user_id), false) as needs_phone
  from public_link l join template t on t.id = l.template_id
  left join template_recipient tr on tr.template_id = l.template_id and tr.identifier = l.role
  where l.slug = ?`;

function stateOf(row: LinkRow | undefined, now: Date): PublicLinkState {
  if (!row || row.disabled_at !== null) return { kind: 'unavailable' };
  if (row.expires_at !== null && new Date(row.expires_at).getTime() <= now.getTime()) return { kind: 'expired' };
  if (row.max_uses !== null && row.uses >= row.max_uses) return { kind: 'exhausted' };
  return { kind: 'open', link: { id: row.id, formName: row.form_name, roleName: row.role_name, verifyEmail: row.verify_email, needsPhone: row.needs_phone } };
}

function refusalOf(state: PublicLinkState): Error {
  if (state.kind === 'expired') return new PublicLinkExpiredError();
  if (state.kind === 'exhausted') return new PublicLinkExhaustedError();
  return new PublicLinkUnavailableError();
}

async function findLink(em: EntityManager, slug: string): Promise<LinkRow | undefined> {
  const [row] = await em.execute<LinkRow[]>(LINK_BY_SLUG, [slug]);
  return row;
}

/** The state of the link `slug` (a read: showing the page changes nothing). */
export async function publicLinkState(context: ServiceContext, slug: string): Promise<PublicLinkState> {
  return stateOf(await findLink(context.em.fork(), slug), context.clock.now());
}

const visitorInput = z.strictObject({
  name: readableName(1, 200),
  email: z.email('must be an email address').max(320, 'must be at most 320 characters'),
  phone: e164Phone.optional(),
  locale: z.enum(locales).default('en-US'),
});

const verifyInput = z.strictObject({
  visit: z.string().max(200, 'must be the form’s visit'),
  code: z
    .string()
    .max(64, 'must be the 6 digits of the code')
    .transform(normalizeOtpInput)
    .pipe(z.string().regex(new RegExp(`^[0-9]{${OTP_POLICY.digits}}$`), 'must be the 6 digits of the code')),
});

export type Visitor = { name: string; email: string; phone: string | null; locale: (typeof locales)[number] };

/** What follows the visitor's details: the code form (its visit's secret for the page to keep), or the signing page. */
export type VisitStep = { kind: 'code'; visitToken: string; visitor: Visitor; expiresAt: string } | { kind: 'signing'; url: string };

/** The codes' HMAC key, derived from the audit key, apart from the signing page's codes. */
function codeHash(auditKey: Buffer, visitId: string, code: string): string {
  const key = createHmac('sha256', auditKey).update('public-link-code/v1').digest();
  return createHmac('sha256', key).update(`${visitId}:${code}`).digest('hex');
}

function secondsUntil(at: number, now: Date): number {
  return Math.max(1, Math.ceil((at - now.getTime()) / 1000));
}

/** The visitor's details from the form: checked, the address lower-cased (the resend rules count per address). */
export function parseVisitor(raw: unknown, needsPhone: boolean): Visitor {
  const input = parseInput(visitorInput, raw);
  if (needsPhone && !input.phone) parseInput(z.strictObject({ phone: e164Phone }), { phone: '' });
  return { name: input.name, email: input.email.trim().toLowerCase(), phone: input.phone ?? null, locale: input.locale };
}

/**
 * The visitor sent their details. With `verifyEmail`: a code is mailed (through the outbox) and the
 * visit recorded, nothing else; at most one code per address and link per resend interval and a
 * few per hour (`Signing.OtpRateLimited`, the signing page's numbers). Without: the envelope is
 * made at once.
 */
export async function startVisit(context: ServiceContext, options: { slug: string; input: unknown }): Promise<VisitStep> {
  const now = context.clock.now();
  const state = await publicLinkState(context, options.slug);
  if (state.kind !== 'open') throw refusalOf(state);
  const visitor = parseVisitor(options.input, state.link.needsPhone);
  if (!state.link.verifyEmail) return { kind: 'signing', url: await useLink(context, { slug: options.slug, visitor, visitId: null }) };
  const visitToken = newSecret('plv');
  const code = String(randomInt(0, 10 ** OTP_POLICY.digits)).padStart(OTP_POLICY.digits, '0');
  const expiresAt = new Date(now.getTime() + OTP_POLICY.codeTtlMs);
  await context.em.fork().transactional(async (em) => {
    const link = await findLink(em, options.slug);
    const current = stateOf(link, now);
    if (current.kind !== 'open' || !link) throw refusalOf(current);
    // One address of one link at a time: two forms racing past the resend checks cannot both mail.
    await em.execute('select pg_advisory_xact_lock(hashtextextended(?, 0))', [`public-link-code:${link.id}:${visitor.email}`], 'run');
    const recent = await em.execute<{ created_at: Date }[]>(
      'select created_at from public_link_visit where public_link_id = ? and email = ? and created_at > ? order by created_at desc limit ?',
      [link.id, visitor.email, new Date(now.getTime() - 60 * 60_000), OTP_POLICY.maxPerHour],
    );
    const last = recent[0] ? new Date(recent[0].created_at).getTime() : null;
    if (last !== null && now.getTime() - last < OTP_POLICY.resendIntervalMs) throw new SigningOtpRateLimitedError('interval', secondsUntil(last + OTP_POLICY.resendIntervalMs, now));
    if (recent.length >= OTP_POLICY.maxPerHour) {
      throw new SigningOtpRateLimitedError('hour', secondsUntil(new Date(recent[recent.length - 1]!.created_at).getTime() + 60 * 60_000, now));
    }
    const visitId = newId();
    await em.execute(
      `insert into public_link_visit (id, created_at, public_link_id, token_hash, name, email, phone, locale, code_hash, code_expires_at, attempts, ip, user_agent)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?)`,
      [
        visitId,
        now,
        link.id,
        hashSecret(visitToken),
        visitor.name,
        visitor.email,
        visitor.phone,
        visitor.locale,
        codeHash(context.auditKey, visitId, code),
        expiresAt,
        context.metadata.ip,
        context.metadata.userAgent?.slice(0, 512) ?? null,
      ],
    );
    await enqueue(
      em,
      OUTBOX_TOPICS.publicLinkCode,
      {
        teamId: link.team_id,
        publicLinkId: link.id,
        visitId,
        formName: link.form_name,
        to: { name: visitor.name, email: visitor.email, locale: visitor.locale },
        expiresAt: expiresAt.toISOString(),
        secret: { code },
      },
      { now },
    );
  });
  return { kind: 'code', visitToken, visitor, expiresAt: expiresAt.toISOString() };
}

type VisitRow = { id: string; name: string; email: string; phone: string | null; locale: string; code_expires_at: Date; verified_at: Date | null; envelope_id: string | null };

/**
 * The visitor entered the code. Each try takes one of the code's attempts by a guarded update
 * (`attempts < 5 and verified_at is null`), committed even when the code is wrong, and the
 * comparison runs only for a try that got one: a thousand racing guesses make five comparisons.
 * A right code makes the envelope (useLink), which marks the visit verified by a second guarded
 * update in its own transaction: of two tries of the right code one makes an envelope.
 */
export async function verifyVisit(context: ServiceContext, options: { slug: string; input: unknown }): Promise<{ url: string; visitor: Visitor }> {
  const input = parseInput(verifyInput, options.input);
  const now = context.clock.now();
  const em = context.em.fork();
  const [visit] = await em.execute<VisitRow[]>(
    `select v.id, v.name, v.email, v.phone, v.locale, v.code_expires_at, v.verified_at, v.envelope_id
       from public_link_visit v join public_link l on l.id = v.public_link_id where v.token_hash = ? and l.slug = ?`,
    [hashSecret(input.visit), options.slug],
  );
  if (!visit) throw new PublicLinkVisitNotFoundError();
  const visitor: Visitor = { name: visit.name, email: visit.email, phone: visit.phone, locale: visit.locale === 'tr-TR' ? 'tr-TR' : 'en-US' };
  if (visit.verified_at !== null) throw new SigningOtpAlreadyUsedError();
  const expiresAt = new Date(visit.code_expires_at);
  if (expiresAt.getTime() <= now.getTime()) throw new SigningOtpExpiredError(expiresAt);
  const [taken] = await em.execute<{ attempts: number; code_hash: string }[]>(
    'update public_link_visit set attempts = attempts + 1 where id = ? and attempts < ? and verified_at is null returning attempts, code_hash',
    [visit.id, OTP_POLICY.maxAttempts],
  );
  if (!taken) {
    const [current] = await em.execute<{ verified_at: Date | null }[]>('select verified_at from public_link_visit where id = ?', [visit.id]);
    if (current?.verified_at) throw new SigningOtpAlreadyUsedError();
    throw new SigningOtpAttemptsExhaustedError(OTP_POLICY.maxAttempts);
  }
  const matches = timingSafeEqual(Buffer.from(codeHash(context.auditKey, visit.id, input.code), 'hex'), Buffer.from(taken.code_hash, 'hex'));
  if (!matches) throw new SigningOtpInvalidError(Math.max(0, OTP_POLICY.maxAttempts - taken.attempts));
  return { url: await useLink(context, { slug: options.slug, visitor, visitId: visit.id }), visitor };
}

/**
 * One use of the link, in one transaction: the use claimed by the guarded update, the visit (if
 * any) marked verified by another, the envelope made from the template as a jumpstart would
 * (the visitor as the link's role's agent, every other role the template's person), recorded as
 * the link's (`publicLinkId`, `public_link.used` with the visitor's address, IP and user agent),
 * sent, and a one-use signing URL made for the visitor. Anything refused rolls all of it back.
 */
async function useLink(context: ServiceContext, options: { slug: string; visitor: Visitor; visitId: string | null }): Promise<string> {
  const now = context.clock.now();
  const { visitor } = options;
  // The link's data merged into the template's documents before the use's transaction (PDF work
  // takes seconds; no lock is held meanwhile). Only for a link still open: the transaction below
  // refuses the others as before. A copy stored for a use that is then refused (the last use taken
  // by a racing visitor) is named by no row and collected with the other orphans.
  const before = await findLink(context.em.fork(), options.slug);
  const merged =
    before !== undefined && stateOf(before, now).kind === 'open'
      ? await mergeTemplateData(
          context,
          { caller: { teamId: before.team_id, workspaceId: before.workspace_id, apiKeyId: before.api_key_id }, templateId: before.template_id },
          {
            data: before.data ?? undefined,
            missingData: before.missing_data,
          },
        )
      : undefined;
  return context.em.fork().transactional(async (em) => {
    const [link] = await em.execute<LinkRow[]>(
      `update public_link l set uses = uses + 1, updated_at = ?
        where l.slug = ? and l.disabled_at is null and (l.expires_at is null or l.expires_at > ?) and (l.max_uses is null or l.uses < l.max_uses)
        returning l.id, l.team_id, l.workspace_id, l.api_key_id, l.template_id, l.role, l.redirect_url, l.prefill, l.verify_email`,
      [now, options.slug, now],
    );
    if (!link) throw refusalOf(stateOf(await findLink(em, options.slug), now));
    if (options.visitId !== null) {
      const [verified] = await em.execute<{ id: string }[]>('update public_link_visit set verified_at = ? where id = ? and verified_at is null returning id', [now, options.visitId]);
      if (!verified) throw new SigningOtpAlreadyUsedError();
    }
    const caller: TeamCaller = { teamId: link.team_id, workspaceId: link.workspace_id, apiKeyId: link.api_key_id };
    const input = parseInput(jumpstartInput, {
      recipients: [{ identifier: link.role, agents: [{ info: { name: visitor.name, email: visitor.email, phone: visitor.phone, locale: visitor.locale } }] }],
    });
    const envelopeId = await copyTemplate(context, {
      em,
      caller,
      templateId: link.template_id,
      input,
      extras: { values: link.prefill, auditDetails: { publicLinkId: link.id }, ...(merged ? { merged } : {}) },
    });
    await em.execute('update envelope set public_link_id = ? where id = ?', [link.id, envelopeId]);
    const [person] = await em.execute<{ recipient_id: string; agent_id: string }[]>(
      'select r.id as recipient_id, a.id as agent_id from recipient r join agent a on a.recipient_id = r.id where r.envelope_id = ? and r.identifier = ? order by a.position limit 1',
      [envelopeId, link.role],
    );
    const workflow: Workflow = {
      em,
      auditKey: context.auditKey,
      publicUrl: context.publicUrl,
      teamId: link.team_id,
      envelopeId,
      now,
      actor: { type: 'agent', id: person!.agent_id },
      request: context.metadata,
    };
    await recordEvent(workflow, 'public_link.used', {
      publicLinkId: link.id,
      visitId: options.visitId,
      recipientId: person!.recipient_id,
      agentId: person!.agent_id,
      name: visitor.name,
      email: visitor.email,
      emailVerified: options.visitId !== null,
      phone: visitor.phone,
      ip: context.metadata.ip,
      userAgent: context.metadata.userAgent,
    });
    await sendDraft(context, em, caller, envelopeId);
    if (options.visitId !== null) await em.execute('update public_link_visit set envelope_id = ? where id = ?', [envelopeId, options.visitId]);
    // The visitor goes on in the signing page through a one-use URL (as embedded signing's):
    // the credential it opens is never in a URL, and the link's redirect is where the page ends.
    const token = newSecret('sgu');
    const expiresAt = new Date(now.getTime() + SIGNING_URL_MINUTES * 60_000);
    const url = em.create(SigningUrl, {
      recipient: person!.recipient_id,
      agent: person!.agent_id,
      personIndex: 0,
      tokenHash: hashSecret(token),
      expiresAt,
      frameOrigin: null,
      returnUrl: link.redirect_url,
      locale: visitor.locale,
      createdBy: null,
      createdAt: now,
    });
    em.persist(url);
    await recordEvent(workflow, 'signing_url.created', {
      recipientId: person!.recipient_id,
      agentId: person!.agent_id,
      signingUrlId: url.id,
      publicLinkId: link.id,
      returnUrl: link.redirect_url,
      expiresAt: expiresAt.toISOString(),
    });
    return signingLink(context.publicUrl, token);
  });
}
