/**
 * Objects in the blob store that no row names any more: an upload refused after its object was
 * written (capacity, a lost race, a transaction that failed), a seal whose guarded update lost,
 * and a crash between writing an object and committing its row. Objects are written before their
 * row (document.service.ts, artefact.service.ts), so an object younger than the grace period may
 * be one whose row is about to commit: only older ones are candidates, and a candidate is removed
 * only when no column names it. The columns that name a blob: `document.content_sha256` (the
 * uploaded original, envelopes' and templates' documents alike), `document.sealed_sha256`, a
 * team's logo (`team.settings` → `branding.logo.sha256`), an envelope's fixed certificates of
 * completion (`envelope.certificates` → `<locale>.sha256`) and a signer's uploaded attachment
 * (`field_attachment.sha256`; a row removed, or dropped at completion as not kept, leaves its object here).
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { BlobInfo, BlobStore } from '../../shared/blob-store/index.ts';

/** How old an unreferenced object must be before it is removed: far beyond any upload's or seal's time between object and row. */
export const ORPHAN_GRACE_MS = 24 * 60 * 60_000;
const BATCH = 500;

/** The hashes of `batch` that some document row (or a team's logo) names. */
async function referenced(em: EntityManager, batch: string[]): Promise<Set<string>> {
  const marks = batch.map(() => '?').join(', ');
  const rows = await em.execute<{ sha256: string }[]>(
    `select content_sha256 as sha256 from document where content_sha256 in (${marks})
     union
     select sealed_sha256 from document where sealed_sha256 in (${marks})
     union
     select settings->'branding'->'logo'->>'sha256' from team where settings->'branding'->'logo'->>'sha256' in (${marks})
     union
     select c.value->>'sha256' from envelope e, jsonb_each(e.certificates) c where e.certificates is not null and c.value->>'sha256' in (${marks})
     union
     select sha256 from field_attachment where sha256 in (${marks})`,
    [...batch, ...batch, ...batch, ...batch, ...batch],
  );
  return new Set(rows.map((row) => row.sha256));
}

/** Removes unreferenced objects last written before `now - graceMs`; answers how many went. */
export async function removeOrphanBlobs(options: { em: EntityManager; blobStore: BlobStore; now: Date; graceMs?: number }): Promise<{ orphanBlobs: number }> {
  const cutoff = options.now.getTime() - (options.graceMs ?? ORPHAN_GRACE_MS);
  const em = options.em.fork();
  let removed = 0;
  const sweep = async (candidates: BlobInfo[]) => {
    const named = await referenced(
      em,
      candidates.map((candidate) => candidate.sha256),
    );
    for (const candidate of candidates) {
      if (named.has(candidate.sha256)) continue;
      // Looked at again just before: an upload of the same bytes since the listing renewed the
      // object (a new modification time), and its row may be on its way.
      const now = await options.blobStore.stat(candidate.sha256);
      if (now === undefined || now.lastModified.getTime() >= cutoff) continue;
      await options.blobStore.delete(candidate.sha256);
      removed += 1;
    }
  };
  let batch: BlobInfo[] = [];
  for await (const object of options.blobStore.list()) {
    if (object.lastModified.getTime() >= cutoff) continue;
    batch.push(object);
    if (batch.length === BATCH) {
      await sweep(batch);
      batch = [];
    }
  }
  if (batch.length > 0) await sweep(batch);
  return { orphanBlobs: removed };
}
