import { z } from 'zod';
import { InvalidRequestError } from '../../shared/errors.ts';
import { hashSecret, newSecret } from '../../shared/ids.ts';
import { isFrameOrigin, isReturnUrl } from '../../shared/web-origin.ts';
import { inEnvelopeTransaction } from '../envelope/envelope-lock.ts';
import { findTeamEnvelope } from '../envelope/team-envelope.ts';
import { locales } from '../recipient/agent.entity.ts';
import { agentPersonSqlText, peopleOf } from '../recipient/agent-people.ts';
import type { ServiceContext } from '../service-context.ts';
import { teamFrameOrigins, teamSettingsOf } from '../team/team-settings.ts';
import { parseInput } from '../validation.ts';
import { ensureSentAndOpen, findActingRecipient, findAgentOf } from './sender-turn.ts';
import { SigningFrameOriginNotAllowedError } from './signing.errors.ts';
import { type SigningEmbedding, SigningToken } from './signing-token.entity.ts';
import { SigningUrl } from './signing-url.entity.ts';
import { apiKeyWorkflow, recordEvent, signingLink } from './workflow.ts';

/*
 * Embedded signing (issue 21): the integrator's server asks for a signing URL for a recipient
 * whose turn it is, and shows it in its own application (`<envelope-signing>`, /embed.js).
 *
 * The URL works once. Serving its page consumes nothing (GET and HEAD only read its state): the
 * page's script, once it runs, asks for the session (POST to the same URL), and that consumes the
 * URL (a guarded single-row update). A page the browser refused to show (framed by an origin its
 * frame-ancestors does not name) never runs its script, so the URL stays usable and the host's
 * `<envelope-signing>` reports `error` when `ready` does not come. Consuming makes the page's
 * session credential: a signing token like an invitation link's, which the page holds and sends
 * as X-Signing-Token, with an end of its own (SESSION_MINUTES) and the URL's frame origin, so
 * every rule of the recipient side (turns, OTP, the envelope's lock) applies unchanged. The
 * credential never appears in a URL: it is handed to the page inside the answer to the first open
 * (docs/decisions.md, "Embedded signing").
 */

/** A URL never opened stops working this long after it was made (on the service clock). */
export const SIGNING_URL_MINUTES = 5;
/** The session a URL opens lasts this long, however it is used (the one-time code's verification lasts as long). */
export const SESSION_MINUTES = 60;

const MINUTE_MS = 60_000;

export const signingUrlInput = z.strictObject({
  agentId: z.string().optional(),
  returnUrl: z.string().max(2000).refine(isReturnUrl, 'must be an absolute https URL (http only on localhost), without credentials or #fragment').optional(),
  frameOrigin: z
    .string()
    .max(300)
    .refine(isFrameOrigin, 'must be an origin: https://host[:port], or http://localhost[:port] for development')
    .transform((origin) => origin.toLowerCase())
    .optional(),
  locale: z.enum(locales, { error: `must be one of ${locales.join(', ')}` }).optional(),
});

export type SigningUrlData = { url: string; expiresAt: string };

/**
 * A one-use signing URL for one person of the recipient (the agent named, or the role's first),
 * while it is that recipient's turn on a sent envelope: `Envelope.NotFound` (another team's
 * envelope reads as none), `Envelope.NotSent`, `Envelope.Closed`, `Recipient.NotFound`,
 * `Signing.NotYourTurn`, `Signing.RecipientCompleted`, `Signing.FrameOriginNotAllowed`.
 * Recorded as `signing_url.created` by the API key.
 */
export async function createSigningUrl(context: ServiceContext, options: { envelopeId: string; recipientId: string; input: unknown }): Promise<SigningUrlData> {
  const input = parseInput(signingUrlInput, options.input);
  const caller = await context.caller();
  return inEnvelopeTransaction(context, caller.teamId, options.envelopeId, async (em) => {
    const envelope = await findTeamEnvelope(em, caller, options.envelopeId, { lock: true });
    const now = context.clock.now();
    ensureSentAndOpen(envelope, now);
    const recipient = await findActingRecipient(em, envelope, options.recipientId);
    const agent = await findAgentOf(em, recipient, input.agentId);
    if (!agent || peopleOf(agent).length === 0) {
      throw new InvalidRequestError([{ path: 'agentId', message: input.agentId === undefined ? 'the recipient has no agent to sign as' : 'is not an agent of this recipient' }]);
    }
    if (input.frameOrigin !== undefined) {
      const settings = await teamSettingsOf(context, caller.teamId);
      const teamOrigins = settings.embedding.frameOrigins;
      const allowed = teamFrameOrigins(teamOrigins, context.signingFrameAncestors);
      if (!allowed.includes(input.frameOrigin)) throw new SigningFrameOriginNotAllowedError(input.frameOrigin, teamOrigins ? 'team_settings' : 'configuration');
    }
    const token = newSecret('sgu');
    const expiresAt = new Date(now.getTime() + SIGNING_URL_MINUTES * MINUTE_MS);
    const url = em.create(SigningUrl, {
      recipient,
      agent,
      personIndex: 0,
      tokenHash: hashSecret(token),
      expiresAt,
      frameOrigin: input.frameOrigin ?? null,
      returnUrl: input.returnUrl ?? null,
      locale: input.locale ?? null,
      createdBy: caller.apiKeyId,
      createdAt: now,
    });
    em.persist(url);
    const workflow = apiKeyWorkflow(context, { em, caller, envelopeId: envelope.id, now });
    await recordEvent(workflow, 'signing_url.created', {
      recipientId: recipient.id,
      agentId: agent.id,
      signingUrlId: url.id,
      frameOrigin: url.frameOrigin,
      returnUrl: url.returnUrl,
      expiresAt: expiresAt.toISOString(),
    });
    return { url: signingLink(context.publicUrl, token), expiresAt: expiresAt.toISOString() };
  });
}

/** What opening `/sign/{token}` with a signing URL's token comes to. */
export type OpenedSigningUrl =
  | { kind: 'opened'; sessionToken: string; frameOrigin: string | null; returnUrl: string | null; locale: string | null }
  /** Opened before: the page may resume a session it holds (same tab), framed as the first open was. */
  | { kind: 'used'; frameOrigin: string | null; returnUrl: string | null; locale: string | null }
  | { kind: 'expired'; frameOrigin: string | null; locale: string | null }
  | { kind: 'unknown' };

/**
 * What a signing URL's page shows before its script opens it (read only: GET and HEAD consume
 * nothing), and `frameAncestors`: the origins that may frame it, the URL's `frameOrigin` alone
 * when it names one, else the team's list (teamFrameOrigins).
 */
export type SigningUrlState =
  | { kind: 'unopened'; frameOrigin: string | null; returnUrl: string | null; locale: string | null; frameAncestors: readonly string[] }
  | { kind: 'used'; frameOrigin: string | null; returnUrl: string | null; locale: string | null; frameAncestors: readonly string[] }
  | { kind: 'expired'; frameOrigin: string | null; locale: string | null; frameAncestors: readonly string[] }
  | { kind: 'unknown' };

type UrlRow = {
  id: string;
  expires_at: Date;
  recipient_id: string;
  agent_id: string;
  person_index: number;
  frame_origin: string | null;
  return_url: string | null;
  locale: string | null;
  consumed_at: Date | null;
  envelope_id: string;
  team_id: string;
  agent_revoked_at: Date | null;
  agent_locale: string | null;
  team_frame_origins: unknown;
};

const URL_ROW = `select u.id, u.expires_at, u.recipient_id, u.agent_id, u.person_index, u.frame_origin, u.return_url, u.locale, u.consumed_at,
    r.envelope_id, e.team_id, a.revoked_at as agent_revoked_at,
    ${agentPersonSqlText('a', 'u.person_index')} ->> 'locale' as agent_locale,
    tm.settings -> 'embedding' -> 'frameOrigins' as team_frame_origins
  from signing_url u join recipient r on r.id = u.recipient_id join envelope e on e.id = r.envelope_id join agent a on a.id = u.agent_id
    join team tm on tm.id = e.team_id`;

/**
 * The state of a signing URL without touching it, for serving its page (GET, HEAD): unopened and
 * in time, used, expired or unknown, with the frame origin and language the page is served with.
 */
export async function signingUrlState(context: ServiceContext, rawToken: string): Promise<SigningUrlState> {
  const now = context.clock.now();
  const [row] = await context.em.fork().execute<UrlRow[]>(`${URL_ROW} where u.token_hash = ?`, [hashSecret(rawToken)]);
  if (!row) return { kind: 'unknown' };
  const locale = row.locale ?? row.agent_locale;
  const frameAncestors = row.frame_origin ? [row.frame_origin] : teamFrameOrigins(row.team_frame_origins, context.signingFrameAncestors);
  if (row.consumed_at) return { kind: 'used', frameOrigin: row.frame_origin, returnUrl: row.return_url, locale, frameAncestors };
  if (new Date(row.expires_at).getTime() <= now.getTime()) return { kind: 'expired', frameOrigin: row.frame_origin, locale, frameAncestors };
  return { kind: 'unopened', frameOrigin: row.frame_origin, returnUrl: row.return_url, locale, frameAncestors };
}

/**
 * Opens a signing URL (its page's script asks, POST): consumes it (only the first open within its 5 minutes gets through the
 * guarded update) and makes the session credential the page will hold. A used, expired or unknown
 * URL is told apart so the page can say which, in the person's language where it is known.
 */
export async function openSigningUrl(context: ServiceContext, rawToken: string): Promise<OpenedSigningUrl> {
  const tokenHash = hashSecret(rawToken);
  const now = context.clock.now();
  return context.em.fork().transactional(async (em) => {
    const [consumed] = await em.execute<{ id: string }[]>('update signing_url set consumed_at = ? where token_hash = ? and consumed_at is null and expires_at > ? returning id', [
      now,
      tokenHash,
      now,
    ]);
    const [row] = await em.execute<UrlRow[]>(`${URL_ROW} where u.token_hash = ?`, [tokenHash]);
    if (!row) return { kind: 'unknown' };
    const locale = row.locale ?? row.agent_locale;
    if (!consumed) {
      return row.consumed_at ? { kind: 'used', frameOrigin: row.frame_origin, returnUrl: row.return_url, locale } : { kind: 'expired', frameOrigin: row.frame_origin, locale };
    }
    const sessionToken = newSecret('sgn');
    const embedding: SigningEmbedding = { urlId: row.id, frameOrigin: row.frame_origin, returnUrl: row.return_url, locale: row.locale };
    const session = em.create(SigningToken, {
      recipient: row.recipient_id,
      agent: row.agent_id,
      personIndex: row.person_index,
      tokenHash: hashSecret(sessionToken),
      expiresAt: new Date(now.getTime() + SESSION_MINUTES * MINUTE_MS),
      embedding,
      // A role delegated away meanwhile: the session is born dead, and the page says the link no longer works.
      revokedAt: row.agent_revoked_at ? now : null,
      createdAt: now,
    });
    em.persist(session);
    await em.flush();
    await em.execute('update signing_url set session_id = ? where id = ?', [session.id, row.id]);
    await recordEvent(
      {
        em,
        auditKey: context.auditKey,
        publicUrl: context.publicUrl,
        teamId: row.team_id,
        envelopeId: row.envelope_id,
        now,
        actor: { type: 'agent', id: row.agent_id },
        request: context.metadata,
      },
      'signing_url.opened',
      { recipientId: row.recipient_id, agentId: row.agent_id, signingUrlId: row.id, tokenId: session.id },
    );
    return { kind: 'opened', sessionToken, frameOrigin: row.frame_origin, returnUrl: row.return_url, locale };
  });
}
