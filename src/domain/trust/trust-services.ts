/**
 * The team's trust services (team settings `trustServices`, issue 35) as the domain uses them:
 * which one a recipient's signature level names or defaults to, and its client secret decrypted
 * for the one moment the service talks to the provider.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { decryptSecret } from '../../shared/encrypted-secret.ts';
import { InvalidRequestError } from '../../shared/errors.ts';
import { type StoredTrustService, storedTrustServices, TRUST_SERVICE_SECRET_LABEL } from '../team/team-settings.ts';

/** A recipient's level (recipient/recipient.entity.ts `signatureLevels`; spelled here so this folder does not import recipient/). */
type SignatureLevel = 'simple' | 'advanced' | 'qualified';

/** A trust service with its client secret in clear, to call the provider with. */
export type TrustServiceProvider = { id: string; name: string; baseUrl: string; clientId: string; clientSecret: string };

export async function teamTrustServices(em: EntityManager, teamId: string): Promise<StoredTrustService[]> {
  const [row] = await em.execute<{ services: unknown }[]>(`select settings -> 'trustServices' as services from team where id = ?`, [teamId]);
  return storedTrustServices(row?.services);
}

/** The service `id` names, or the team's first offering `level`; undefined when there is none. */
export function pickTrustService(services: StoredTrustService[], level: SignatureLevel, id: string | null | undefined): StoredTrustService | undefined {
  if (level === 'simple') return undefined;
  if (id) return services.find((service) => service.id === id && service.levels.includes(level));
  return services.find((service) => service.levels.includes(level));
}

/**
 * A recipient's level and trust service, checked against the team's services (adding or changing
 * a recipient or a template role): a level above simple needs a service offering it, and a named
 * service must exist and offer it. Refused as `Request.Invalid` at the field, the message
 * starting with the reason's name (`Recipient.TrustServiceUnavailable`).
 */
export async function ensureSignatureLevelOffered(
  em: EntityManager,
  teamId: string,
  recipient: { type: string; signatureLevel: SignatureLevel; trustServiceId: string | null; path: string },
): Promise<void> {
  if (recipient.signatureLevel === 'simple') {
    if (recipient.trustServiceId) throw new InvalidRequestError([{ path: `${recipient.path}.trustServiceId`, message: 'is only for a signatureLevel of advanced or qualified' }]);
    return;
  }
  if (recipient.type !== 'signer') {
    throw new InvalidRequestError([
      { path: `${recipient.path}.signatureLevel`, message: `Recipient.SignatureLevelNotSigner: only a signer signs with its own certificate; a ${recipient.type} stays simple` },
    ]);
  }
  const services = await teamTrustServices(em, teamId);
  if (pickTrustService(services, recipient.signatureLevel, recipient.trustServiceId) !== undefined) return;
  const path = recipient.trustServiceId ? `${recipient.path}.trustServiceId` : `${recipient.path}.signatureLevel`;
  const message = recipient.trustServiceId
    ? `Recipient.TrustServiceUnavailable: the team has no trust service "${recipient.trustServiceId}" offering ${recipient.signatureLevel} signatures (team settings trustServices)`
    : `Recipient.TrustServiceUnavailable: the team has no trust service offering ${recipient.signatureLevel} signatures; add one to the team settings' trustServices first`;
  throw new InvalidRequestError([{ path, message }]);
}

/** The provider to call, its secret decrypted. */
export function providerOf(auditKey: Buffer, service: StoredTrustService): TrustServiceProvider {
  if (service.clientSecret === null) throw new Error(`the trust service ${service.id} has no client secret`);
  return {
    id: service.id,
    name: service.name,
    baseUrl: service.baseUrl,
    clientId: service.clientId,
    clientSecret: decryptSecret(auditKey, TRUST_SERVICE_SECRET_LABEL, service.clientSecret),
  };
}
