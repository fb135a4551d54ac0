import type { EntityManager } from '@mikro-orm/postgresql';
import { InvalidApiKeyError } from '../../shared/errors.ts';
import { hashSecret, isUuid, newSecret } from '../../shared/ids.ts';
import { boundedText, parseInput } from '../validation.ts';
import { ApiKey } from './api-key.entity.ts';
import { API_KEY_REVOKED_CHANNEL, type ApiKeyCache, evictApiKeyInProcess } from './api-key-cache.ts';
import { Team } from './team.entity.ts';
import { ApiKeyNotFoundError, TeamNotFoundError, WorkspaceNotFoundError } from './team.errors.ts';
import type { TeamCaller } from './team-caller.ts';
import { Workspace } from './workspace.entity.ts';

/** The authenticated caller of the team-facing API: a team, acting through one of its keys. */

export type IssuedApiKey = { keyId: string; teamId: string; apiKey: string };

const API_KEY_PREFIX = 'esk';

function requireName(name: string, path: string): string {
  return parseInput(boundedText(1, 120), name.trim(), path);
}

/**
 * Issues a new key for a team. The key is returned once and only its hash is kept, so a lost
 * key is replaced, never recovered.
 */
export async function createApiKey(em: EntityManager, options: { teamId: string; label?: string }): Promise<IssuedApiKey> {
  if (!isUuid(options.teamId)) throw new TeamNotFoundError(options.teamId);
  const team = await em.findOne(Team, { id: options.teamId });
  if (!team) throw new TeamNotFoundError(options.teamId);
  const apiKey = newSecret(API_KEY_PREFIX);
  const record = em.create(ApiKey, {
    team,
    keyHash: hashSecret(apiKey),
    prefix: apiKey.slice(0, 12),
    label: options.label ?? null,
  });
  await em.persist(record).flush();
  return { keyId: record.id, teamId: team.id, apiKey };
}

/**
 * Revokes a key at once: every later request carrying it gets `Auth.InvalidApiKey`. The caches of
 * this process forget it as soon as the revocation commits; other processes sharing the database
 * hear of it through the notification, which PostgreSQL delivers only on commit.
 */
export async function revokeApiKey(em: EntityManager, options: { keyId: string }): Promise<{ keyId: string; revokedAt: Date }> {
  if (!isUuid(options.keyId)) throw new ApiKeyNotFoundError(options.keyId);
  const revoked = await em.transactional(async (transaction) => {
    const revokedAt = new Date();
    // A guarded single-row update: revoking twice keeps the first revocation time.
    await transaction.nativeUpdate(ApiKey, { id: options.keyId, revokedAt: null }, { revokedAt });
    const key = await transaction.findOne(ApiKey, { id: options.keyId });
    if (!key) throw new ApiKeyNotFoundError(options.keyId);
    // Announced again on a repeated revocation too: harmless, and it heals a missed notification.
    await transaction.execute('select pg_notify(?, ?)', [API_KEY_REVOKED_CHANNEL, key.id]);
    return { keyId: key.id, revokedAt: key.revokedAt ?? revokedAt };
  });
  evictApiKeyInProcess(revoked.keyId);
  return revoked;
}

/**
 * Creates a team (and a new workspace for it unless one is named) with its first key.
 */
export async function createTeam(em: EntityManager, options: { name: string; workspaceId?: string; workspaceName?: string }): Promise<IssuedApiKey & { workspaceId: string }> {
  const name = requireName(options.name, 'name');
  return em.transactional(async (transaction) => {
    let workspace: Workspace | null;
    if (options.workspaceId !== undefined) {
      workspace = isUuid(options.workspaceId) ? await transaction.findOne(Workspace, { id: options.workspaceId }) : null;
      if (!workspace) throw new WorkspaceNotFoundError(options.workspaceId);
    } else {
      workspace = transaction.create(Workspace, { name: requireName(options.workspaceName ?? name, 'workspaceName') });
    }
    const team = transaction.create(Team, { workspace, name });
    await transaction.persist(team).flush();
    const issued = await createApiKey(transaction, { teamId: team.id });
    return { workspaceId: workspace.id, ...issued };
  });
}

/**
 * Resolves the caller from the raw header value. Unknown and revoked keys are deliberately
 * indistinguishable to the caller. With a cache, a key verified recently costs no statement.
 */
export async function authenticateApiKey(em: EntityManager | (() => EntityManager), apiKey: string, cache?: ApiKeyCache): Promise<TeamCaller> {
  if (!apiKey.startsWith(`${API_KEY_PREFIX}_`) || apiKey.length > 200) throw new InvalidApiKeyError();
  const keyHash = hashSecret(apiKey);
  const cached = cache?.get(keyHash);
  if (cached) return cached;
  const generation = cache?.generation();
  // The entity manager may be made on demand: a cached key needs none.
  const manager = typeof em === 'function' ? em() : em;
  const key = await manager.findOne(ApiKey, { keyHash, revokedAt: null }, { populate: ['team'] });
  if (!key) throw new InvalidApiKeyError();
  const caller = { teamId: key.team.id, workspaceId: key.team.getEntity().workspace.id, apiKeyId: key.id };
  if (cache && generation !== undefined) cache.remember(keyHash, caller, generation);
  return caller;
}

/**
 * On the first start with an empty database, creates a default workspace and team and returns
 * its key so the operator has something to call the API with. Returns null when any team exists.
 * A transaction-scoped advisory lock makes two instances starting at once create one team, not two.
 */
export async function ensureDefaultTeam(em: EntityManager): Promise<(IssuedApiKey & { workspaceId: string }) | null> {
  return em.transactional(async (transaction) => {
    await transaction.execute(`select pg_advisory_xact_lock(hashtext('envelope-service:default-team'))`);
    const existing = await transaction.count(Team, {});
    if (existing > 0) return null;
    return createTeam(transaction, { name: 'Default team', workspaceName: 'Default workspace' });
  });
}
