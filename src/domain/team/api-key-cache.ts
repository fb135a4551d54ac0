import { LRUCache } from 'lru-cache';
import { listenForNotifications } from '../../db/notification-listener.ts';
import type { Logger } from '../../shared/logger.ts';
import type { TeamCaller } from './team-caller.ts';

/** The PostgreSQL channel a revocation is announced on; the payload is the key's id. */
export const API_KEY_REVOKED_CHANNEL = 'api_key_revoked';

export type ApiKeyCacheOptions = {
  /** Most keys remembered at once (least recently used go first). */
  max?: number;
  /** How long a verified key is trusted without asking the database again: the safety net for a missed notification. */
  ttlMs?: number;
  /**
   * Milliseconds now, for the TTL: the service's clock, so a test moves time forward instead of
   * sleeping past the TTL (and a busy machine cannot age an entry out before the test looks).
   */
  now?: () => number;
};

/** Every cache of this process, so a revocation made in this process evicts from all of them at once. */
const cachesInProcess = new Set<ApiKeyCache>();

/**
 * Verified API keys, remembered in process: SHA-256 of the key → its caller. Only successful
 * lookups are stored (an unknown key never fills it, a new key works at once), the TTL is
 * absolute (a busy key is still re-checked every `ttlMs`), and entries are evicted by key id on
 * revocation: at once for revocations made in this process (`revokeApiKey`), through the
 * revocation listener for those made by other processes.
 *
 * A lookup that was running while an eviction happened may have read the key before the
 * revocation committed, so it is not remembered: `generation()` is taken before the lookup and
 * `remember()` ignores the result if any eviction has happened since.
 */
export class ApiKeyCache {
  readonly #entries: LRUCache<string, TeamCaller>;
  #generation = 0;
  #suspended = false;

  constructor(options: ApiKeyCacheOptions = {}) {
    this.#entries = new LRUCache<string, TeamCaller>({
      max: options.max ?? 10_000,
      ttl: options.ttlMs ?? 5_000,
      updateAgeOnGet: false,
      ...(options.now ? { perf: { now: options.now } } : {}),
    });
    cachesInProcess.add(this);
  }

  get(keyHash: string): TeamCaller | undefined {
    return this.#suspended ? undefined : this.#entries.get(keyHash);
  }

  /** Taken before a database lookup and handed to `remember()` after it. */
  generation(): number {
    return this.#generation;
  }

  remember(keyHash: string, caller: TeamCaller, generation: number): void {
    if (this.#suspended || generation !== this.#generation) return;
    this.#entries.set(keyHash, Object.freeze({ teamId: caller.teamId, workspaceId: caller.workspaceId, apiKeyId: caller.apiKeyId }));
  }

  /** Forgets every entry of this key. A scan: the cache is bounded and revocations are rare. */
  evictKey(apiKeyId: string): void {
    this.#generation += 1;
    for (const [keyHash, caller] of this.#entries.entries()) {
      if (caller.apiKeyId === apiKeyId) this.#entries.delete(keyHash);
    }
  }

  /** Forgets everything and stops remembering until `resume()`: revocations may be going unheard. */
  suspend(): void {
    this.#generation += 1;
    this.#suspended = true;
    this.#entries.clear();
  }

  resume(): void {
    this.#generation += 1;
    this.#suspended = false;
  }

  get size(): number {
    return this.#entries.size;
  }

  close(): void {
    this.suspend();
    cachesInProcess.delete(this);
  }
}

/** Who else in this process must hear of a revocation at once (live subscriptions opened with the key end). */
const revocationWatchersInProcess = new Set<(apiKeyId: string) => void>();

export function onApiKeyRevokedInProcess(watcher: (apiKeyId: string) => void): () => void {
  revocationWatchersInProcess.add(watcher);
  return () => revocationWatchersInProcess.delete(watcher);
}

/** Called by `revokeApiKey` once the revocation has committed. */
export function evictApiKeyInProcess(apiKeyId: string): void {
  for (const cache of cachesInProcess) cache.evictKey(apiKeyId);
  for (const watcher of revocationWatchersInProcess) watcher(apiKeyId);
}

export type RevocationListener = {
  close(): Promise<void>;
};

/**
 * Holds one dedicated connection (outside the ORM's pool) that LISTENs for revocations made by
 * any process sharing the database and evicts them from `cache`. The cache is suspended (empty,
 * every request asks the database) whenever the connection is not listening, since revocations
 * may be missed meanwhile; the connection is re-made with backoff. Resolves after the first
 * attempt, successful or not. Only for a real PostgreSQL server: the embedded one has a single
 * backend whose LISTEN state every connection shares.
 */
export async function listenForApiKeyRevocations(options: {
  connectionString: string;
  cache: ApiKeyCache;
  logger: Logger;
  retryMs?: { first: number; max: number };
}): Promise<RevocationListener> {
  const { cache } = options;
  return listenForNotifications({
    connectionString: options.connectionString,
    channels: [API_KEY_REVOKED_CHANNEL],
    name: 'api-key-revocations',
    messages: { up: 'listening for API key revocations: key cache on', down: 'API key revocation listener disconnected: key cache off until it is back' },
    logger: options.logger,
    retryMs: options.retryMs,
    onNotification: (_channel, keyId) => cache.evictKey(keyId),
    onUp: () => cache.resume(),
    onDown: () => cache.suspend(),
  });
}
