import type { Readable } from 'node:stream';
import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { InvalidRequestError, type ValidationIssue } from '../../shared/errors.ts';
import { hashSecret, isUuid, newId } from '../../shared/ids.ts';
import { DocumentNotFoundError, DocumentPageNotFoundError } from '../document/document.errors.ts';
import type { Envelope } from '../envelope/envelope.entity.ts';
import { isClosedEnvelopeStatus } from '../envelope/envelope.entity.ts';
import { inEnvelopeTransaction } from '../envelope/envelope-lock.ts';
import { Field } from '../field/field.entity.ts';
import { storedValuesNotFitting } from '../field/field-fit.ts';
import { applyFieldRules, fillOnCompletion } from '../field/field-submission.ts';
import { type AttachmentFile, parseFieldValue, SERVICE_FILLED_TYPES, summariseBiometricValue } from '../field/field-values.ts';
import { readerOf } from '../read-model.ts';
import { Agent } from '../recipient/agent.entity.ts';
import { agentInfoSchema } from '../recipient/agent-input.ts';
import { agentPersonSqlText, peopleOf } from '../recipient/agent-people.ts';
import { Recipient } from '../recipient/recipient.entity.ts';
import type { ServiceContext } from '../service-context.ts';
import { teamFrameOrigins } from '../team/team-settings.ts';
import { boundedText, parseInput } from '../validation.ts';
import { Approval } from './approval.entity.ts';
import { dropUnkeptAttachments, resolveAttachmentValues } from './attachment-values.ts';
import { renderEscrowedCopy } from './escrow.ts';
import { ensureNotPastExpiry, isPastExpiry } from './expiry.ts';
import { ensureOtpVerified } from './otp-gate.ts';
import {
  EnvelopeClosedError,
  SigningAlreadyApprovedError,
  SigningAlreadyDelegatedError,
  SigningApproverCannotSubmitError,
  SigningEnvelopeChangedError,
  SigningFieldNotAssignedError,
  SigningFieldReadonlyError,
  SigningHostCannotSubmitError,
  SigningNotApproverError,
  SigningNotDelegatorError,
  SigningNotHostError,
  SigningNotHostedSignerError,
  SigningNotYourTurnError,
  SigningRecipientCompletedError,
  SigningRequiredFieldsMissingError,
  SigningRoleCompletedError,
  SigningSessionExpiredError,
  SigningTokenInvalidError,
  SigningTokenMissingError,
  SigningValueDoesNotFitError,
} from './signing.errors.ts';
import { readSigningSession, type SigningSessionData } from './signing.read.ts';
import { SigningToken } from './signing-token.entity.ts';
import { advanceTurns, closeEnvelope, createSigningToken, inviteRecipient, lockEnvelope, queueHandoverNotice, recordEvent, type Workflow } from './workflow.ts';

/*
 * The recipient side (docs/reference/contract.md §7): every operation is authorised by the signing link's token
 * (`X-Signing-Token`), bound to one recipient and one person. Changes run under the envelope's
 * row lock, re-checking the token and the envelope there, and are refused with a named error and
 * no change when out of turn, for another recipient's field, for a completed role, a closed or
 * expired envelope, or a dead or unknown token.
 */

export type TokenRow = {
  id: string;
  revoked_at: Date | null;
  last_used_at: Date | null;
  /** An embedded session's end (signing-url.service.ts); null for an invitation link. */
  expires_at: Date | null;
  recipient_id: string;
  agent_id: string;
  envelope_id: string;
  team_id: string;
  status: string;
  /** The link's role reached its quorum without this link's agent (an approver role only). */
  role_done_without_me: boolean;
};

/**
 * Whether the link's role is an approver role that completed without an approval of the link's
 * agent: that agent's approval is no longer needed (`Signing.RoleCompleted`, a 410 page).
 */
const ROLE_DONE_WITHOUT_ME = `(r.type = 'approver' and r.completed_at is not null
  and not exists (select 1 from approval p where p.recipient_id = r.id and p.agent_id = t.agent_id)) as role_done_without_me`;

/** Finds the token's envelope (to queue for its lock); unknown tokens and dead links are refused by name. */
/** The link of the request's `X-Signing-Token`, alive, of an envelope not closed (else its refusal by name). */
export async function lookUpToken(context: ServiceContext): Promise<TokenRow> {
  const token = context.signingToken;
  if (!token) throw new SigningTokenMissingError();
  const [row] = await context.em.execute<TokenRow[]>(
    `select t.id, t.revoked_at, t.last_used_at, t.expires_at, t.recipient_id, t.agent_id, r.envelope_id, e.team_id, e.status, ${ROLE_DONE_WITHOUT_ME}
       from signing_token t join recipient r on r.id = t.recipient_id join envelope e on e.id = r.envelope_id
      where t.token_hash = ?`,
    [hashSecret(token)],
  );
  if (!row) throw new SigningTokenInvalidError();
  if (isClosedEnvelopeStatus(row.status)) throw new EnvelopeClosedError(row.envelope_id, row.status as Envelope['status']);
  if (row.revoked_at) throw new SigningTokenInvalidError();
  if (row.expires_at && context.clock.now() >= new Date(row.expires_at)) throw new SigningSessionExpiredError(new Date(row.expires_at));
  if (row.role_done_without_me) throw new SigningRoleCompletedError(row.recipient_id);
  return row;
}

/**
 * What an invitation link (`/sign/sgn_…`) comes to before the page loads, for the page's HTTP
 * status: a link nobody made is `unknown` (404); one that died (`revoked`: delegated away, or
 * replaced by a resend), whose envelope closed, or that expired (the envelope's `expiresAt`, an
 * embedded session's end) is gone (410); else `open`. Read only: the first view is recorded when
 * the page reads its session, as before. `locale` is the person's, where the sender gave one.
 */
/** An invitation link's state, and the origins that may frame its page (the team's, teamFrameOrigins). */
export type SigningLinkState =
  | { kind: 'unknown' }
  | { kind: 'open' | 'revoked' | 'expired' | 'role_completed'; locale: string | null; frameAncestors: readonly string[] }
  | { kind: 'closed'; status: Envelope['status']; locale: string | null; frameAncestors: readonly string[] };

export async function signingLinkState(context: ServiceContext, rawToken: string): Promise<SigningLinkState> {
  const [row] = await context.em.execute<
    {
      revoked_at: Date | null;
      expires_at: Date | null;
      status: string;
      envelope_expires_at: Date | null;
      locale: string | null;
      frame_origin: string | null;
      team_frame_origins: unknown;
      role_done_without_me: boolean;
    }[]
  >(
    `select t.revoked_at, t.expires_at, e.status, e.expires_at as envelope_expires_at, ${ROLE_DONE_WITHOUT_ME},
            coalesce(t.embedding ->> 'locale', ${agentPersonSqlText('a', 't.person_index')} ->> 'locale') as locale,
            t.embedding ->> 'frameOrigin' as frame_origin, tm.settings -> 'embedding' -> 'frameOrigins' as team_frame_origins
       from signing_token t join recipient r on r.id = t.recipient_id join envelope e on e.id = r.envelope_id join agent a on a.id = t.agent_id
       join team tm on tm.id = e.team_id
      where t.token_hash = ?`,
    [hashSecret(rawToken)],
  );
  if (!row) return { kind: 'unknown' };
  const locale = row.locale;
  // A session a signing URL opened keeps that URL's frame origin; any other link, the team's list.
  const frameAncestors = row.frame_origin ? [row.frame_origin] : teamFrameOrigins(row.team_frame_origins, context.signingFrameAncestors);
  // The same order as lookUpToken: a closed envelope is said first (its page still offers the final copy).
  if (isClosedEnvelopeStatus(row.status)) return { kind: 'closed', status: row.status as Envelope['status'], locale, frameAncestors };
  if (row.revoked_at) return { kind: 'revoked', locale, frameAncestors };
  const now = context.clock.now();
  if ((row.expires_at && now >= new Date(row.expires_at)) || isPastExpiry(row.envelope_expires_at, now)) return { kind: 'expired', locale, frameAncestors };
  if (row.role_done_without_me) return { kind: 'role_completed', locale, frameAncestors };
  return { kind: 'open', locale, frameAncestors };
}

export type Acting = { workflow: Workflow; envelope: Envelope; token: SigningToken; recipient: Recipient };

/**
 * Runs a recipient's change under the envelope lock, after checking again (now that nothing can
 * move) that the link is alive and the envelope is sent and not past `expiresAt`.
 */
export async function actWithToken<T>(context: ServiceContext, work: (acting: Acting) => Promise<T>): Promise<T> {
  const found = await lookUpToken(context);
  return inEnvelopeTransaction(context, found.team_id, found.envelope_id, async (em) => {
    const envelope = await lockEnvelope(em, found.envelope_id);
    const token = await em.findOne(SigningToken, { id: found.id }, { refresh: true });
    if (!envelope || !token) throw new SigningTokenInvalidError();
    if (envelope.status !== 'sent') throw new EnvelopeClosedError(envelope.id, envelope.status);
    if (token.revokedAt) throw new SigningTokenInvalidError();
    const now = context.clock.now();
    if (token.expiresAt && now >= token.expiresAt) throw new SigningSessionExpiredError(token.expiresAt);
    ensureNotPastExpiry(envelope, now);
    const recipient = await em.findOneOrFail(Recipient, { id: found.recipient_id }, { refresh: true });
    const workflow: Workflow = {
      em,
      auditKey: context.auditKey,
      publicUrl: context.publicUrl,
      teamId: found.team_id,
      envelopeId: envelope.id,
      now,
      actor: { type: 'agent', id: found.agent_id },
      request: context.metadata,
    };
    return work({ workflow, envelope, token, recipient });
  });
}

export function sessionInTransaction(em: EntityManager, tokenId: string, now: Date) {
  return readSigningSession(readerOf(em), tokenId, now);
}

/**
 * The signing session of a link. The first open of each link records `signing.viewed` (a
 * guarded update on the token decides "first", so two tabs opening at once record it once).
 */
export async function openSigningSession(context: ServiceContext): Promise<SigningSessionData> {
  const found = await lookUpToken(context);
  const now = context.clock.now();
  // A link opened before costs no transaction: its view is on record.
  if (found.last_used_at === null) await recordFirstView(context, found, now);
  return readSigningSession(context.reader, found.id, now);
}

async function recordFirstView(context: ServiceContext, found: TokenRow, now: Date) {
  await context.em.fork().transactional(async (em) => {
    // Shares the envelope row with other readers but waits for a closing change: a view is
    // never recorded after the envelope closed.
    const [envelope] = await em.execute<{ status: string }[]>('select status from envelope where id = ? for share', [found.envelope_id]);
    if (!envelope || envelope.status !== 'sent') return;
    const changed = await em.nativeUpdate(SigningToken, { id: found.id, lastUsedAt: null, revokedAt: null }, { lastUsedAt: now });
    if (changed !== 1) return;
    await recordEvent(
      {
        em,
        auditKey: context.auditKey,
        publicUrl: context.publicUrl,
        teamId: found.team_id,
        envelopeId: found.envelope_id,
        now,
        actor: { type: 'agent', id: found.agent_id },
        request: context.metadata,
      },
      'signing.viewed',
      { recipientId: found.recipient_id, agentId: found.agent_id, tokenId: found.id },
    );
  });
}

const submitInput = z.strictObject({
  values: z
    .array(z.strictObject({ fieldId: z.string(), value: z.unknown() }))
    .max(500, 'at most 500 values at a time')
    .default([]),
  complete: z.boolean().default(false),
  /** The text the signer agreed to when completing (the signing page's confirmation), kept in the audit log. */
  consent: boundedText(1, 2000).optional(),
  /** The envelope revision the page loaded; an older one than the envelope's is `Signing.EnvelopeChanged`. */
  revision: z.number({ error: 'must be a whole number' }).int('must be a whole number').min(0).optional(),
});

export function ensureMayAct(recipient: Recipient) {
  // An approver role completes by quorum: the agents left over are no longer needed (410).
  if (recipient.completedAt) throw recipient.type === 'approver' ? new SigningRoleCompletedError(recipient.id) : new SigningRecipientCompletedError(recipient.id);
  if (!recipient.activatedAt) throw new SigningNotYourTurnError(recipient.id);
}

/** A host is done when every in-person signer it hosts is. */
async function completeHostIfDone(workflow: Workflow, hostId: string) {
  const host = await workflow.em.findOneOrFail(Recipient, { id: hostId });
  if (host.completedAt) return;
  const hosted = await workflow.em.find(Recipient, { hostedBy: hostId });
  if (hosted.some((signer) => !signer.completedAt)) return;
  host.completedAt = workflow.now;
  await recordEvent(workflow, 'recipient.completed', { recipientId: host.id, identifier: host.identifier, hosted: hosted.map((signer) => signer.id) });
}

/**
 * Saves values for some or all of the recipient's fields, and with `complete` completes the
 * recipient (every required field must then have a value): `completedAt` and the fields'
 * `submittedAt` are set and the turns move on, finalizing the envelope when it was the last
 * required recipient. Every value is checked against its field's type and config; a readonly
 * field keeps its value. Any refusal changes nothing (the whole submission is one transaction).
 */
export async function submitSigning(context: ServiceContext, options: { input: unknown }): Promise<SigningSessionData> {
  const input = parseInput(submitInput, options.input);
  return actWithToken(context, async ({ workflow, envelope, token, recipient }) => {
    const { em, now } = workflow;
    // Checked under the envelope's row lock, the lock a correction holds while it moves the
    // revision: a submission and a correction never interleave, and the later one sees the other.
    if (input.revision !== undefined && input.revision !== envelope.revision) {
      throw new SigningEnvelopeChangedError({ envelopeId: envelope.id, revision: envelope.revision, submittedRevision: input.revision });
    }
    if (recipient.type === 'host') throw new SigningHostCannotSubmitError(recipient.id);
    // Completing an approver by submit would bypass its quorum.
    if (recipient.type === 'approver') throw new SigningApproverCannotSubmitError(recipient.id);
    ensureMayAct(recipient);
    await ensureOtpVerified(em, { token, recipient, now });
    const fields = await em.find(Field, { recipient }, { orderBy: { createdAt: 'asc', identifier: 'asc' } });
    const fieldById = new Map(fields.map((field) => [field.id, field]));
    const foreign = input.values.filter((entry) => !fieldById.has(entry.fieldId.toLowerCase())).map((entry) => entry.fieldId);
    if (foreign.length > 0) throw new SigningFieldNotAssignedError(foreign);
    const readonly = input.values.filter((entry) => fieldById.get(entry.fieldId.toLowerCase())!.readonly).map((entry) => entry.fieldId);
    if (readonly.length > 0) throw new SigningFieldReadonlyError(readonly);
    const issues: ValidationIssue[] = [];
    const seen = new Set<string>();
    const accepted: { field: Field; value: Record<string, unknown> | null }[] = [];
    for (const [index, entry] of input.values.entries()) {
      const field = fieldById.get(entry.fieldId.toLowerCase())!;
      if (seen.has(field.id)) issues.push({ path: `values[${index}].fieldId`, message: 'the same field is given twice' });
      seen.add(field.id);
      const parsed = parseFieldValue(field.type, entry.value, field.config, `values[${index}].value`);
      issues.push(...parsed.issues);
      accepted.push({ field, value: parsed.value });
    }
    if (issues.length > 0) throw new InvalidRequestError(issues);
    // Attachment values name uploads by id; each becomes its file's own record, or is refused.
    await resolveAttachmentValues(em, recipient, accepted);
    for (const { field, value } of accepted) field.value = value;
    // Conditions and formulas are the service's to apply, with the values as they now stand
    // (field-rules.js, the module the page applies them with live), over the whole envelope's
    // fields, since they may read an earlier recipient's. The recipient's own fields are the same
    // entities here. A value given for a hidden field is dropped, and the trail says so.
    const hasRules = fields.some((field) => field.type === 'formula' || field.visibleWhen);
    const { hidden, dropped } = hasRules ? applyFieldRules(await em.find(Field, { envelope: recipient.envelope }), fields) : { hidden: new Set<Field>(), dropped: [] };
    if (accepted.length > 0 || dropped.length > 0) {
      await recordEvent(workflow, 'field.submitted', {
        recipientId: recipient.id,
        agentId: token.agent.id,
        fields: accepted.map(({ field, value }) => ({
          fieldId: field.id,
          identifier: field.identifier,
          type: field.type,
          cleared: value === null,
          // The strokes stay with the field as evidence; the trail keeps their summary and hash.
          ...(field.type === 'biometric_signature' && value ? { biometric: summariseBiometricValue(value) } : {}),
          // Which files, by name and hash: the trail proves what the signer handed over.
          ...(field.type === 'attachment' && value ? { attachments: (value.files as AttachmentFile[]).map(({ id, name, sha256 }) => ({ id, name, sha256 })) } : {}),
        })),
        ...(dropped.length > 0 ? { droppedAsHidden: dropped.map((field) => ({ fieldId: field.id, identifier: field.identifier, type: field.type })) } : {}),
      });
    }
    if (input.complete)
      fillOnCompletion(
        fields.filter((field) => !hidden.has(field)),
        { now, person: peopleOf(await em.findOneOrFail(Agent, token.agent.id))[token.personIndex] },
      );
    // Every value about to be drawn must fit its boxes (never below 8 pt, never outside, never
    // cut): what was sent now and, on completing, everything of the role the PDF will show,
    // including the values the service just filled in and those the sender gave.
    const shown = fields.filter((field) => !hidden.has(field) && (input.complete || accepted.some((entry) => entry.field === field)));
    const tooLong = await storedValuesNotFitting(em, shown, await localeOfRecipient(em, recipient));
    if (tooLong.length > 0) throw new SigningValueDoesNotFitError(tooLong);
    if (input.complete) {
      // A hidden field is not required: the signer cannot see it. Nor is one the service fills: an
      // email field of a person reached by phone only stays empty, and that is nobody's omission.
      const missing = fields
        .filter((field) => field.required && !hidden.has(field) && !SERVICE_FILLED_TYPES.includes(field.type) && (field.value === null || field.value === undefined))
        .map((field) => field.id);
      if (missing.length > 0) throw new SigningRequiredFieldsMissingError(missing);
      recipient.completedAt = now;
      await dropUnkeptAttachments(em, recipient, fields);
      for (const field of fields) if (field.value !== null && field.value !== undefined) field.submittedAt = now;
      await recordEvent(workflow, 'recipient.completed', {
        recipientId: recipient.id,
        identifier: recipient.identifier,
        agentId: token.agent.id,
        personIndex: token.personIndex,
        ...(input.consent ? { consent: input.consent } : {}),
      });
      if (recipient.type === 'in_person_signer' && recipient.hostedBy) await completeHostIfDone(workflow, recipient.hostedBy.id);
      await advanceTurns(workflow);
    }
    await em.flush();
    return sessionInTransaction(em, token.id, now);
  });
}

/** The locale values are written in on the page and in the PDF: the recipient's first person's (as the artefacts read it). */
async function localeOfRecipient(em: EntityManager, recipient: Recipient): Promise<string> {
  const first = await em.findOne(Agent, { recipient }, { orderBy: { position: 'asc', id: 'asc' } });
  return (first ? peopleOf(first)[0]?.locale : undefined) ?? 'en-US';
}

const declineInput = z.strictObject({ reason: boundedText(1, 500) });

/**
 * Declines on behalf of the recipient (on its turn): the envelope closes as `voided`, the
 * documents become `declined`, and the trail names who declined and why.
 */
export async function declineSigning(context: ServiceContext, options: { input: unknown }): Promise<SigningSessionData> {
  const input = parseInput(declineInput, options.input);
  return actWithToken(context, async ({ workflow, token, recipient }) => {
    ensureMayAct(recipient);
    await ensureOtpVerified(workflow.em, { token, recipient, now: workflow.now });
    // An agent who approved does not reject the same role afterwards.
    if (recipient.type === 'approver' && (await workflow.em.count(Approval, { recipient, agent: token.agent.id })) > 0) throw new SigningAlreadyApprovedError(recipient.id, token.agent.id);
    recipient.declinedAt = workflow.now;
    recipient.declineReason = input.reason;
    await recordEvent(workflow, 'recipient.declined', {
      recipientId: recipient.id,
      identifier: recipient.identifier,
      agentId: token.agent.id,
      personIndex: token.personIndex,
      reason: input.reason,
    });
    await closeEnvelope(workflow, { status: 'voided', reason: input.reason, documentStatus: 'declined', cause: 'decline', recipientId: recipient.id });
    return sessionInTransaction(workflow.em, token.id, workflow.now);
  });
}

const approveInput = z.strictObject({ comment: boundedText(1, 2000).optional() });

/**
 * An approver's agent approves, on the role's turn (rejecting is `declineSigning`). Each agent
 * counts once (the approval's unique key per role and agent); the role completes when `quorum`
 * distinct agents approved, and the turns move on. Under the envelope's row lock, so racing
 * agents approve one at a time; the insert (`on conflict do nothing`) and the completion
 * (`where completed_at is null`) are guarded single-row writes besides, so however the requests
 * interleave exactly `quorum` approvals count, the role completes once and the next turn starts
 * once. The agents left over then get `Signing.RoleCompleted`.
 */
export async function approveSigning(context: ServiceContext, options: { input: unknown }): Promise<SigningSessionData> {
  const input = parseInput(approveInput, options.input);
  return actWithToken(context, async ({ workflow, token, recipient }) => {
    const { em, now } = workflow;
    if (recipient.type !== 'approver') throw new SigningNotApproverError(recipient.id);
    ensureMayAct(recipient);
    await ensureOtpVerified(em, { token, recipient, now });
    const agentId = token.agent.id;
    const inserted = await em.execute<{ id: string }[]>(
      `insert into approval (id, created_at, recipient_id, agent_id, person_index, comment, made_quorum) values (?, ?, ?, ?, ?, ?, false)
         on conflict (recipient_id, agent_id) do nothing returning id`,
      [newId(), now, recipient.id, agentId, token.personIndex, input.comment ?? null],
    );
    if (inserted.length !== 1) throw new SigningAlreadyApprovedError(recipient.id, agentId);
    const [{ count }] = await em.execute<{ count: string }[]>('select count(*) from approval where recipient_id = ?', [recipient.id]);
    const approvals = Number(count);
    await recordEvent(workflow, 'recipient.approved', {
      recipientId: recipient.id,
      identifier: recipient.identifier,
      agentId,
      personIndex: token.personIndex,
      approvals,
      quorum: recipient.quorum,
      ...(input.comment ? { comment: input.comment } : {}),
    });
    if (approvals >= recipient.quorum) {
      const completed = await em.nativeUpdate(Recipient, { id: recipient.id, completedAt: null }, { completedAt: now });
      if (completed === 1) {
        await em.nativeUpdate(Approval, { id: inserted[0].id }, { madeQuorum: true });
        // The unit of work sees the completion before the turns move on.
        await em.findOne(Recipient, { id: recipient.id }, { refresh: true });
        const approvedBy = await em.find(Approval, { recipient }, { orderBy: { createdAt: 'asc', id: 'asc' } });
        await recordEvent(workflow, 'recipient.completed', {
          recipientId: recipient.id,
          identifier: recipient.identifier,
          agentId,
          personIndex: token.personIndex,
          quorum: recipient.quorum,
          approvedBy: approvedBy.map((approval) => approval.agent.id),
          madeQuorum: agentId,
        });
        await advanceTurns(workflow);
      }
    }
    await em.flush();
    return sessionInTransaction(em, token.id, now);
  });
}

const delegateInput = z.strictObject({ person: agentInfoSchema }).superRefine((value, check) => {
  if (!value.person.email && !value.person.phone) check.addIssue({ code: 'custom', path: ['person'], message: 'needs an email or a phone to be invited' });
});

/**
 * A delegator hands its role to another person instead of signing: `delegatedAt` is set, the
 * role's agents are replaced by the new person (who is invited with a link of its own), and
 * every link of the old agents dies. A role is delegated at most once.
 */
export async function delegateSigning(context: ServiceContext, options: { input: unknown }): Promise<{ recipientId: string; delegatedAt: string }> {
  const input = parseInput(delegateInput, options.input);
  return actWithToken(context, async ({ workflow, token, recipient }) => {
    const { em, now } = workflow;
    if (recipient.type !== 'delegator') throw new SigningNotDelegatorError(recipient.id);
    if (recipient.delegatedAt) throw new SigningAlreadyDelegatedError(recipient.id);
    ensureMayAct(recipient);
    await ensureOtpVerified(em, { token, recipient, now });
    const previous = await em.find(Agent, { recipient, revokedAt: null }, { orderBy: { position: 'asc' } });
    for (const agent of previous) agent.revokedAt = now;
    await em.nativeUpdate(SigningToken, { recipient, revokedAt: null }, { revokedAt: now });
    const person = {
      name: input.person.name,
      email: input.person.email ?? null,
      phone: input.person.phone ?? null,
      locale: input.person.locale ?? null,
      phoneContactMethod: input.person.phoneContactMethod ?? null,
    };
    const [last] = await em.find(Agent, { recipient }, { orderBy: { position: 'desc' }, limit: 1 });
    const agent = em.create(Agent, { recipient, position: (last?.position ?? 0) + 1, kind: 'info', info: person, snapshot: [person], snapshotAt: now, createdAt: now });
    em.persist(agent);
    recipient.delegatedAt = now;
    await recordEvent(workflow, 'recipient.delegated', {
      recipientId: recipient.id,
      identifier: recipient.identifier,
      fromAgentId: token.agent.id,
      toAgentId: agent.id,
      to: { name: person.name, email: person.email, phone: person.phone },
    });
    const delegatingAgent = previous.find((candidate) => candidate.id === token.agent.id);
    const delegating = delegatingAgent ? peopleOf(delegatingAgent)[token.personIndex] : undefined;
    if (delegating) await queueHandoverNotice(workflow, { recipientId: recipient.id, agentId: token.agent.id, person: delegating, handedTo: person.name });
    await inviteRecipient(workflow, recipient, { delegatedBy: delegating?.name ?? null });
    await em.flush();
    return { recipientId: recipient.id, delegatedAt: now.toISOString() };
  });
}

/**
 * A host starts the in-person session of one hosted signer whose turn it is: a fresh link for
 * that signer, answered to the host's device only (it is never sent anywhere), with which the
 * device then acts as the signer.
 */
export async function startHostedSigning(context: ServiceContext, options: { recipientId: string }): Promise<{ recipientId: string; token: string }> {
  return actWithToken(context, async ({ workflow, token: hostToken, recipient }) => {
    const { em, now } = workflow;
    if (recipient.type !== 'host') throw new SigningNotHostError(recipient.id);
    // The host hands its device to the signer: a host with a phone confirms it is them first.
    await ensureOtpVerified(em, { token: hostToken, recipient, now });
    const target = isUuid(options.recipientId)
      ? await em.findOne(Recipient, { envelope: workflow.envelopeId, hostedBy: recipient.id, type: 'in_person_signer', id: options.recipientId.toLowerCase() })
      : null;
    if (!target) throw new SigningNotHostedSignerError(options.recipientId);
    ensureMayAct(target);
    const [agent] = await em.find(Agent, { recipient: target, revokedAt: null }, { orderBy: { position: 'asc' }, limit: 1 });
    if (!agent) throw new SigningNotHostedSignerError(options.recipientId);
    const { token, entity } = createSigningToken(em, { recipient: target, agent, personIndex: 0 }, now);
    await em.flush();
    await recordEvent(workflow, 'signing.hosted', { hostRecipientId: recipient.id, recipientId: target.id, agentId: agent.id, tokenId: entity.id });
    return { recipientId: target.id, token };
  });
}

/**
 * One document of the link's envelope for the signing page to render (pdf.js draws the pages; the
 * fields are overlaid by the page itself). It is the only way a recipient gets a document's bytes
 * before the envelope is finalized, so it is an escrowed copy (signing/escrow.ts): the original
 * marked on every page as not executed, in the person's language (else `fallbackLocale`, the
 * page's), never sealed. Refused as the session is refused (dead link, closed envelope); a
 * document of another envelope is simply not found.
 */
export async function openSigningDocument(
  context: ServiceContext,
  documentId: string,
  options: { fallbackLocale?: string; page?: string } = {},
): Promise<{ stream: Readable; byteSize: number }> {
  const found = await lookUpToken(context);
  if (!isUuid(documentId)) throw new DocumentNotFoundError(documentId);
  const document = await context.reader
    .selectFrom('document')
    .select(['content_sha256 as contentSha256', 'page_count as pageCount'])
    .where('envelope_id', '=', found.envelope_id)
    .where('id', '=', documentId)
    .executeTakeFirst();
  if (!document) throw new DocumentNotFoundError(documentId);
  // One page (the signing page fetches them as they come near the screen): an index from 0 as written in its path.
  const page = options.page === undefined ? undefined : /^(0|[1-9][0-9]{0,5})$/.test(options.page) ? Number(options.page) : Number.NaN;
  if (page !== undefined && !(page < Number(document.pageCount))) throw new DocumentPageNotFoundError(documentId, options.page!);
  const [person] = await context.em.execute<{ locale: string | null }[]>(
    `select coalesce(t.embedding ->> 'locale', ${agentPersonSqlText('a', 't.person_index')} ->> 'locale') as locale
       from signing_token t join agent a on a.id = t.agent_id where t.id = ?`,
    [found.id],
  );
  return renderEscrowedCopy(context, { contentSha256: document.contentSha256, teamId: found.team_id }, person?.locale ?? options.fallbackLocale, page);
}
