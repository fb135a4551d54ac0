/**
 * A signer's advanced or qualified signature at a trust service (issue 35, docs/artefacts.md
 * "Signature levels"): the signing side's half. Finishing with a level above simple saves the
 * values and sends the browser to the provider's OAuth 2 authorization instead of completing the
 * role; the callback's half (artefact/signer-signature.service.ts) prepares the documents, has the
 * hashes authorized and signed, embeds the signatures and completes the role with
 * `completeSigner` below, the one completion a simple signer's Finish uses too.
 *
 * The OAuth `state` is a 256-bit secret of which only the hash is kept (`signer_signature.state_hash`,
 * unique): whoever holds the browser's redirect holds the step, nobody else. The PKCE verifier is
 * derived from the state and the service's key (never stored): the callback, holding the state,
 * derives it again, and a code taken off the redirect alone cannot be exchanged.
 */
import { createHash, createHmac } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { encryptSecret } from '../../shared/encrypted-secret.ts';
import { hashSecret, newId, newSecret } from '../../shared/ids.ts';
import { inEnvelopeTransaction } from '../envelope/envelope-lock.ts';
import type { Field } from '../field/field.entity.ts';
import { Recipient } from '../recipient/recipient.entity.ts';
import type { ServiceContext } from '../service-context.ts';
import type { StoredTrustService } from '../team/team-settings.ts';
import { createCscClient, TrustServiceError } from '../trust/csc-client.ts';
import { pickTrustService, teamTrustServices } from '../trust/trust-services.ts';
import { dropUnkeptAttachments } from './attachment-values.ts';
import { SigningTrustServiceFailedError } from './signing.errors.ts';
import type { SigningToken } from './signing-token.entity.ts';
import { advanceTurns, recordEvent, type Workflow } from './workflow.ts';

/** The encryption label of the signing link kept to bring the browser back (shared/encrypted-secret.ts). */
export const TRUST_RETURN_TOKEN_LABEL = 'signer-signature-return-token';

/** Where every provider sends the browser back: one route for both steps, told apart by the state's row. */
export const TRUST_SERVICE_CALLBACK_PATH = '/sign/trust-service/callback';

export function trustServiceRedirectUri(publicUrl: string): string {
  return `${publicUrl}${TRUST_SERVICE_CALLBACK_PATH}`;
}

/** A fresh OAuth state: the secret for the URL and the hash the row keeps. */
export function newTrustState(): { state: string; stateHash: string } {
  const state = newSecret('tss');
  return { state, stateHash: hashSecret(state) };
}

/** PKCE (RFC 7636) from the state: the verifier is an HMAC of it under the service's key, the challenge its S256. */
export function pkceOf(auditKey: Buffer, state: string): { verifier: string; challenge: string } {
  const verifier = createHmac('sha256', auditKey).update(`csc-pkce\0${state}`).digest('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/**
 * The role's completion, one rule for a simple signer's Finish and for the callback that embedded
 * a trust service's signature: `completedAt`, the values' `submittedAt`, the kept attachments, the
 * `recipient.completed` event, a host done when its last hosted signer is, and the turns moved on.
 */
export async function completeSigner(
  workflow: Workflow,
  options: { recipient: Recipient; fields: Field[]; agentId: string; personIndex: number; consent: string | null; signature?: Record<string, unknown> },
): Promise<void> {
  const { recipient, fields } = options;
  recipient.completedAt = workflow.now;
  await dropUnkeptAttachments(workflow.em, recipient, fields);
  for (const field of fields) if (field.value !== null && field.value !== undefined) field.submittedAt = workflow.now;
  await recordEvent(workflow, 'recipient.completed', {
    recipientId: recipient.id,
    identifier: recipient.identifier,
    agentId: options.agentId,
    personIndex: options.personIndex,
    ...(options.consent ? { consent: options.consent } : {}),
    ...(options.signature ? { signature: options.signature } : {}),
  });
  if (recipient.type === 'in_person_signer' && recipient.hostedBy) await completeHostIfDone(workflow, recipient.hostedBy.id);
  await advanceTurns(workflow);
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

/** What Finish answers a signer whose level is above simple: where to send the browser, and the provider to check. */
export type TrustSignatureStart = { authorizeUrl: string; service: StoredTrustService; stateHash: string; attempt: TrustAttempt };

/** Whose attempt it is, for its trail. */
export type TrustAttempt = { teamId: string; envelopeId: string; recipientId: string; agentId: string; trustServiceId: string };

/**
 * Finish for a signer with a level above simple (the values are saved and checked by the caller,
 * under the envelope lock): the signer's row is (re)started at `service_authorizing` with a new
 * state, which also retires whatever step an earlier attempt left open (its state no longer
 * matches, so its callback changes nothing). Answers the provider's authorization URL with
 * `scope=service`: the signer lets the service read its credential and certificate, which the
 * signature's signed attributes need before the hash exists.
 */
export async function startTrustSignature(
  workflow: Workflow,
  options: { recipient: Recipient; token: SigningToken; rawToken: string; consent: string | null; locale: string | null },
): Promise<TrustSignatureStart> {
  const { em, now } = workflow;
  const { recipient, token } = options;
  const level = recipient.signatureLevel as 'advanced' | 'qualified';
  const service = pickTrustService(await teamTrustServices(em, workflow.teamId), level, recipient.trustServiceId);
  if (service === undefined) {
    throw new SigningTrustServiceFailedError({
      reason: 'not_configured',
      detail: `the team has no trust service offering ${level} signatures any more${recipient.trustServiceId ? ` ("${recipient.trustServiceId}")` : ''}; ask the sender`,
    });
  }
  const { state, stateHash } = newTrustState();
  await upsertSignerSignature(em, {
    envelopeId: workflow.envelopeId,
    recipientId: recipient.id,
    agentId: token.agent.id,
    tokenId: token.id,
    personIndex: token.personIndex,
    level,
    trustServiceId: service.id,
    stateHash,
    returnToken: encryptSecret(workflow.auditKey, TRUST_RETURN_TOKEN_LABEL, options.rawToken),
    consent: options.consent,
    now,
  });
  await recordEvent(workflow, 'signature.authorization_started', { recipientId: recipient.id, agentId: token.agent.id, level, trustServiceId: service.id });
  const client = createCscClient({ baseUrl: service.baseUrl, clientId: service.clientId, clientSecret: '' });
  const authorizeUrl = client.authorizeUrl({
    redirectUri: trustServiceRedirectUri(workflow.publicUrl),
    state,
    scope: 'service',
    codeChallenge: pkceOf(workflow.auditKey, state).challenge,
    description: 'Read your signing credential and certificate to prepare your signature',
    ...(options.locale ? { lang: options.locale } : {}),
  });
  return {
    authorizeUrl,
    service,
    stateHash,
    attempt: { teamId: workflow.teamId, envelopeId: workflow.envelopeId, recipientId: recipient.id, agentId: token.agent.id, trustServiceId: service.id },
  };
}

async function upsertSignerSignature(
  em: EntityManager,
  row: {
    envelopeId: string;
    recipientId: string;
    agentId: string;
    tokenId: string;
    personIndex: number;
    level: string;
    trustServiceId: string;
    stateHash: string;
    returnToken: string;
    consent: string | null;
    now: Date;
  },
): Promise<void> {
  // The recipient's row is behind the envelope lock the caller holds: no other Finish races this.
  await em.execute(
    `insert into signer_signature (id, created_at, updated_at, envelope_id, recipient_id, agent_id, token_id, person_index, level, trust_service_id, status, state_hash, return_token, consent)
     values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'service_authorizing', ?, ?, ?)
     on conflict (recipient_id) do update set updated_at = excluded.updated_at, agent_id = excluded.agent_id, token_id = excluded.token_id,
       person_index = excluded.person_index, level = excluded.level, trust_service_id = excluded.trust_service_id, status = 'service_authorizing',
       state_hash = excluded.state_hash, return_token = excluded.return_token, consent = excluded.consent,
       credential_id = null, certificates = null, certificate = null, prepared = null, error = null, signed_at = null`,
    [newId(), row.now, row.now, row.envelopeId, row.recipientId, row.agentId, row.tokenId, row.personIndex, row.level, row.trustServiceId, row.stateHash, row.returnToken, row.consent],
  );
}

/**
 * Marks the step failed (retryable: the values stay saved) unless another state has taken the row
 * since; `stateHash` names the attempt that failed.
 */
export async function failTrustSignature(em: EntityManager, options: { stateHash: string; error: TrustFailureRecord; now: Date }): Promise<boolean> {
  const changed = await em.execute<{ id: string }[]>(`update signer_signature set status = 'failed', error = ?, updated_at = ? where state_hash = ? and status <> 'signed' returning id`, [
    JSON.stringify(options.error),
    options.now,
    options.stateHash,
  ]);
  return changed.length > 0;
}

/** The statuses of a step under way (the row's others: `signed`, `failed`). */
export const TRUST_STEPS_UNDER_WAY = ['service_authorizing', 'preparing', 'credential_authorizing', 'signing'] as const;

/** Ends a step under way whose values changed (a save after Finish): it is `failed`, Finish starts it over. */
export async function retireTrustSignatureStep(em: EntityManager, options: { recipientId: string; now: Date }): Promise<void> {
  const error: TrustFailureRecord = {
    name: 'Signing.TrustServiceFailed',
    reason: 'values_changed',
    message: 'Your values changed after you finished; finish again to sign what they say now.',
    providerSaid: null,
  };
  await em.execute(`update signer_signature set status = 'failed', error = ?, updated_at = ? where recipient_id = ? and status in (${TRUST_STEPS_UNDER_WAY.map(() => '?').join(', ')})`, [
    JSON.stringify(error),
    options.now,
    options.recipientId,
    ...TRUST_STEPS_UNDER_WAY,
  ]);
}

/** How long Finish waits for the provider's `info` before saying it is unreachable. */
const PROVIDER_PROBE_TIMEOUT_MS = 10_000;

/**
 * The provider answers its `info` (public, no credential): else the step just started is failed and
 * Finish answers `Signing.TrustServiceFailed`, the values saved. Sending a browser to a provider
 * that is down would leave the signer on a browser error page instead of the signing page.
 */
export async function ensureTrustServiceAnswers(context: ServiceContext, started: TrustSignatureStart): Promise<void> {
  const client = createCscClient({ baseUrl: started.service.baseUrl, clientId: started.service.clientId, clientSecret: '' }, { timeoutMs: PROVIDER_PROBE_TIMEOUT_MS });
  try {
    await client.info();
  } catch (error) {
    const failure = trustServiceFailure(error, started.service.id);
    await endAttempt(context, { stateHash: started.stateHash, attempt: started.attempt, error: failure });
    throw failure;
  }
}

/**
 * Ends an attempt as failed (unless a newer one replaced it, or it signed) and records
 * `signature.failed` in the envelope's trail: which reason, what the provider said (never a secret).
 */
export async function endAttempt(context: ServiceContext, options: { stateHash: string; attempt: TrustAttempt; error: SigningTrustServiceFailedError }): Promise<void> {
  const ended = await failTrustSignature(context.em.fork(), { stateHash: options.stateHash, error: errorRecordOf(options.error), now: context.clock.now() });
  if (!ended) return;
  const { attempt } = options;
  await inEnvelopeTransaction(context, attempt.teamId, attempt.envelopeId, async (em) => {
    const workflow: Workflow = {
      em,
      auditKey: context.auditKey,
      publicUrl: context.publicUrl,
      teamId: attempt.teamId,
      envelopeId: attempt.envelopeId,
      now: context.clock.now(),
      actor: { type: 'agent', id: attempt.agentId },
      request: context.metadata,
    };
    await recordEvent(workflow, 'signature.failed', { recipientId: attempt.recipientId, agentId: attempt.agentId, trustServiceId: attempt.trustServiceId, ...errorRecordOf(options.error) });
  });
}

/** A trust service's failure as the caller sees it (a TrustServiceError's reason and message; anything else is a bug and rethrown). */
export function trustServiceFailure(error: unknown, trustServiceId: string): SigningTrustServiceFailedError {
  if (error instanceof SigningTrustServiceFailedError) return error;
  if (error instanceof TrustServiceError) {
    const said = error.providerErrorDescription ?? error.providerError;
    return new SigningTrustServiceFailedError({
      reason: error.reason,
      detail: said ? `the provider said "${said}"` : error.message,
      trustServiceId,
      ...(said ? { providerSaid: said } : {}),
    });
  }
  throw error;
}

export function errorRecordOf(error: SigningTrustServiceFailedError): TrustFailureRecord {
  return {
    name: error.name,
    reason: String(error.context.reason),
    message: error.description,
    providerSaid: typeof error.context.providerSaid === 'string' ? error.context.providerSaid : null,
  };
}

/** A failed attempt as `signer_signature.error` keeps it and the signing session answers it. */
export type TrustFailureRecord = { name: string; reason: string; message: string; providerSaid: string | null };
