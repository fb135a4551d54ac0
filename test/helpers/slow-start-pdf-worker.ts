/**
 * The PDF worker, loading 1.5 s later than usual: a thread starting on a busy machine, made
 * certain. For tests of what the pool charges a file for (`workerUrl` of createPdfWorkerPool).
 * Node runs this file itself in the thread, outside vitest: only Node built-ins and our modules.
 */
import { setTimeout as sleep } from 'node:timers/promises';

export const START_DELAY_MS = 1500;

await sleep(START_DELAY_MS);
await import('../../src/domain/pdf/worker.ts');
