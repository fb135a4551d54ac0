/**
 * Runs the raw baseline (raw-worker.ts) on `threads` worker threads at once: each thread warms up
 * with one envelope, then all start together and the wall time until the last finishes gives
 * envelopes per minute. CPU is this process's (the threads' work; nothing else runs here then).
 */
import { Worker } from 'node:worker_threads';
import type { SealMaterial } from '../../src/domain/pdf/seal.ts';
import type { RawStamp, RawWorkerData } from './raw-worker.ts';

export type RawResult = { threads: number; envelopes: number; seconds: number; envelopesPerMinute: number; cpuMsPerEnvelope: number };

export async function runRaw(options: { threads: number; envelopes: number; documents: Uint8Array[]; stamps: RawStamp[]; material: SealMaterial; outDir: string }): Promise<RawResult> {
  const perThread = Array.from({ length: options.threads }, (_, thread) => Math.floor(options.envelopes / options.threads) + (thread < options.envelopes % options.threads ? 1 : 0));
  const workers = perThread.map(
    (envelopes, thread) =>
      new Worker(new URL('./raw-worker.ts', import.meta.url), {
        workerData: { documents: options.documents, stamps: options.stamps, material: options.material, envelopes, outDir: options.outDir, thread } satisfies RawWorkerData,
      }),
  );
  try {
    const message = (worker: Worker, kind: string) =>
      new Promise<{ kind: string; ms?: number }>((resolve, reject) => {
        const onMessage = (value: { kind: string; ms?: number }) => {
          if (value.kind !== kind) return;
          worker.off('message', onMessage);
          resolve(value);
        };
        worker.on('message', onMessage);
        worker.once('error', reject);
        worker.once('exit', (code) => reject(new Error(`raw worker exited (${code}) before "${kind}"`)));
      });
    await Promise.all(workers.map((worker) => message(worker, 'ready')));
    const cpuBefore = process.cpuUsage();
    const started = process.hrtime.bigint();
    const done = workers.map((worker) => message(worker, 'done'));
    for (const worker of workers) worker.postMessage('go');
    await Promise.all(done);
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const cpu = process.cpuUsage(cpuBefore);
    return {
      threads: options.threads,
      envelopes: options.envelopes,
      seconds,
      envelopesPerMinute: (options.envelopes / seconds) * 60,
      cpuMsPerEnvelope: (cpu.user + cpu.system) / 1000 / options.envelopes,
    };
  } finally {
    await Promise.all(workers.map((worker) => worker.terminate()));
  }
}
