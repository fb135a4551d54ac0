import type { EntityManager } from '@mikro-orm/postgresql';
import { isOtpRequired, OTP_POLICY } from '../notification/otp-policy.ts';
import { Agent, type AgentInfo } from '../recipient/agent.entity.ts';
import { peopleOf } from '../recipient/agent-people.ts';
import type { Recipient } from '../recipient/recipient.entity.ts';
import { SigningOtpRequiredError } from './signing.errors.ts';
import type { SigningToken } from './signing-token.entity.ts';

/** The person a link belongs to (the agent's send-time snapshot at the link's person index). */
export async function personOfToken(em: EntityManager, token: SigningToken): Promise<{ agent: Agent; person: AgentInfo | null }> {
  const agent = await em.findOneOrFail(Agent, { id: token.agent.id });
  return { agent, person: peopleOf(agent)[token.personIndex] ?? null };
}

/**
 * Refuses a recipient's change (`Signing.OtpRequired`) when the link's person has a phone and no
 * code was verified on this link within the verification period. Runs under the envelope lock of
 * the change it guards.
 */
export async function ensureOtpVerified(em: EntityManager, options: { token: SigningToken; recipient: Recipient; now: Date }): Promise<void> {
  const { person } = await personOfToken(em, options.token);
  if (!isOtpRequired(person?.phone, options.recipient.type)) return;
  const since = new Date(options.now.getTime() - OTP_POLICY.verificationTtlMs);
  const [verified] = await em.execute<{ id: string }[]>('select id from signing_otp where token_id = ? and verified_at > ? and verified_at <= ? limit 1', [
    options.token.id,
    since,
    options.now,
  ]);
  if (!verified) throw new SigningOtpRequiredError(options.recipient.id);
}
