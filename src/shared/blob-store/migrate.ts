import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { BlobStore } from './types.ts';

export type MigrationSummary = { copied: number; skipped: number; failed: number; failures: { sha256: string; error: string }[] };

async function sha256Of(stream: Readable): Promise<{ sha256: string; byteSize: number }> {
  const hash = createHash('sha256');
  let byteSize = 0;
  for await (const chunk of stream) {
    hash.update(chunk as Buffer);
    byteSize += (chunk as Buffer).length;
  }
  return { sha256: hash.digest('hex'), byteSize };
}

/**
 * Copies every object of `source` to `target` (`npm run cli -- blobs migrate`: DATA_DIR/blobs to
 * the bucket). Objects already in the target with the same size are skipped, so running it again
 * after an interruption finishes the job and a finished one copies nothing. Each copy is read back
 * from the target and hashed; one that does not hash to its name is deleted again and counted as
 * failed (a later run retries it). One object's failure does not stop the others.
 */
export async function migrateBlobs(source: BlobStore, target: BlobStore, onObject?: (sha256: string, outcome: 'copied' | 'skipped' | 'failed') => void): Promise<MigrationSummary> {
  const summary: MigrationSummary = { copied: 0, skipped: 0, failed: 0, failures: [] };
  for await (const object of source.list()) {
    let outcome: 'copied' | 'skipped' | 'failed';
    try {
      const existing = await target.stat(object.sha256);
      if (existing !== undefined && existing.byteSize === object.byteSize) {
        outcome = 'skipped';
      } else {
        const staged = await target.stage(await source.openRead(object.sha256));
        if (staged.sha256 !== object.sha256) {
          await staged.discard();
          throw new Error(`the source file hashes to ${staged.sha256}, not to its name`);
        }
        await staged.commit();
        const readBack = await sha256Of(await target.openRead(object.sha256));
        if (readBack.sha256 !== object.sha256 || readBack.byteSize !== object.byteSize) {
          await target.delete(object.sha256);
          throw new Error(`read back from the target as ${readBack.byteSize} bytes with SHA-256 ${readBack.sha256}`);
        }
        outcome = 'copied';
      }
    } catch (error) {
      outcome = 'failed';
      summary.failures.push({ sha256: object.sha256, error: `${(error as Error)?.message ?? error}${(error as Error)?.cause ? ` (${((error as Error).cause as Error)?.message})` : ''}` });
    }
    summary[outcome] += 1;
    onObject?.(object.sha256, outcome);
  }
  return summary;
}
