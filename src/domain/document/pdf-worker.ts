/**
 * The body of a PDF worker thread (see pdf-worker-pool.ts). It runs one task at a time and
 * answers every task with a message; inspection refusals are answers, not errors, because an
 * Error loses its class (and the refusal's reason) when it crosses the thread boundary.
 *
 * Only Node built-ins and pdf-inspector.ts are imported: Node loads this file itself in the
 * thread (types stripped), outside any bundler or test transform.
 */
import { parentPort } from 'node:worker_threads';
import { inspectPdfFile, PdfInspectionError } from './pdf-inspector.ts';
import type { PdfTask, PdfTaskAnswer } from './pdf-worker-protocol.ts';

async function run(task: PdfTask): Promise<PdfTaskAnswer> {
  try {
    return { id: task.id, outcome: 'done', inspection: await inspectPdfFile(task.path) };
  } catch (error) {
    if (error instanceof PdfInspectionError) return { id: task.id, outcome: 'refused', reason: error.reason, detail: error.detail };
    const failure = error instanceof Error ? error : new Error(String(error));
    return { id: task.id, outcome: 'failed', message: failure.message, code: (failure as NodeJS.ErrnoException).code };
  }
}

if (parentPort === null) throw new Error('pdf-worker.ts runs only as a worker thread');
const port = parentPort;
port.on('message', (task: PdfTask) => {
  void run(task).then((answer) => port.postMessage(answer));
});
// Tells the pool the module loaded: a worker that dies after this is worth replacing at once.
port.postMessage({ ready: true });
