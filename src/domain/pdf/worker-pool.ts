/**
 * A small, process-wide pool of worker threads for PDF work, so that no PDF, however it is
 * built, costs the event loop anything but a message. Inspection runs here today; rendering and
 * sealing are meant to join it.
 *
 * Why threads: the inspector's cost grows with the size of the PDF's dictionaries, and on the
 * main thread a valid 14 MB one-page file with a huge page dictionary held every request of
 * every team for 2.6 s. Why our own pool rather than piscina: the time limit must count from
 * the moment a worker starts on a file, not from when the file joined the queue (under a burst
 * of uploads, waiting is not the file's fault), and a worker that runs out of its heap must be
 * told apart from other failures. Both take a few lines here.
 *
 * Every worker has a heap limit (`resourceLimits`); a file that needs more ends that worker
 * (`ERR_WORKER_OUT_OF_MEMORY`) without touching the main thread. A file that takes longer than
 * the time limit has its worker terminated. Either way the caller gets `PdfWorkLimitError` and a
 * fresh worker is started in the dead one's place at once. A file's time counts from when a
 * loaded worker takes it: a thread's start-up (loading pdf-lib and the rest, most of a second,
 * several on a busy machine) is never charged to the file that happens to be next. The queue is
 * bounded in length and in waiting time (`PdfWorkersBusyError`), so a burst of uploads gets a
 * quick "retry" instead of piling up.
 *
 * The heap limit does not cover Buffers and ArrayBuffers, and pdf-lib inflates object streams
 * into those when it loads a file (bounded per document at upload, pdf/inspect/limits.ts). A worker
 * reports after each task how much it holds; one over `recycleAboveMb` is ended and replaced, so
 * that memory goes back to the system instead of staying with an idle thread.
 *
 * Fair by team. Every task names the team it is done for (the service's own work, with no team,
 * is a team of its own), and waiting tasks are kept per team: a free worker takes the next task of
 * the next team in turn (round-robin over the teams with work), so a team's task queued behind
 * fifty files of another waits for one of them, not fifty. And one team may hold at most
 * `threads - 1` workers at once (with one thread, that one): a team's burst never occupies every
 * worker while another team's task waits for one. Each kind of task has its own time budget (`PDF_TASK_BUDGETS_MS`): what
 * inspecting one upload may take is not what rendering a 300-page envelope may.
 */
import os from 'node:os';
import { Worker } from 'node:worker_threads';
import { recordFailure, withSpan } from '../../shared/tracing.ts';
import { type PdfInspection, PdfInspectionError } from './inspect/inspect.ts';
import type { PdfVerification } from './verify.ts';
import type {
  ApplyPlacementsTask,
  AuditPdfTask,
  EmbedSignatureTask,
  PdfTask,
  PdfTaskAnswer,
  PdfWorkerReply,
  PlacementSources,
  PrepareSignatureTask,
  ReadPlacementsTask,
  RenderTask,
  SealTask,
  SignDigestReply,
  SignDigestRequest,
} from './worker-protocol.ts';

export type PdfWorkerPoolOptions = {
  /** Worker threads. Default: one per core but one (the event loop's), at least 1, at most 4. */
  threads?: number;
  /** Files waiting for a worker, beyond which uploads are refused as busy. */
  maxQueue?: number;
  /** How long a file may wait for a worker before it is refused as busy. */
  queueTimeoutMs?: number;
  /** How long one worker may spend inspecting one file (the `inspect` budget of `PDF_TASK_BUDGETS_MS`). */
  taskTimeoutMs?: number;
  /** Other budgets than `PDF_TASK_BUDGETS_MS`'s, by kind of task. */
  budgetsMs?: Partial<Record<PdfTaskKind, number>>;
  /** Workers one team may hold at once: default `threads - 1`, at least 1 (docs/limits.md). */
  maxThreadsPerTeam?: number;
  /** Told each time a worker takes a task, in the order they are taken (tests follow the order here). */
  onTaskStart?: (task: { kind: PdfTaskKind; team: string }) => void;
  /** Each worker's V8 heap (old generation) limit. */
  maxHeapMb?: number;
  /** A worker holding more memory than this after a task (heap and outside it) is replaced. */
  recycleAboveMb?: number;
  /** The module each thread runs: pdf-worker.ts; tests give one that is slower to start. */
  workerUrl?: URL;
  /** A thread that has had no task for this long ends; the next task starts one. */
  idleExitMs?: number;
};

export type PdfTaskKind = PdfTask['kind'];

/**
 * How long a worker may spend on one task, by kind, from when a loaded worker takes it. Past it the
 * worker is ended (`PdfWorkLimitError`, `time`) and replaced. Each is set by what its work can
 * cost on a document the inspector accepted (pdf/inspect/limits.ts bounds its operators, forms and
 * inflated size), with room for a busy machine:
 * - `inspect`: one upload's structure; ordinary files take milliseconds, hostile 48 MB ones a few
 *   seconds (`taskTimeoutMs` of PDF_WORKER_DEFAULTS).
 * - `read-placements`: pdf.js interprets every page to find text tags; a document at the operator
 *   limit takes about 5 s (1 million operators), so 30 s. It was 60 s, and a worker held that long
 *   by one team's file is a minute another team waits.
 * - `apply-placements`: rewrites the pages carrying tags and saves the document with pdf-lib:
 *   linear in its size, 30 s.
 * - `verify`: a caller's sealed PDF, hashed and its signatures checked: linear in its size, 30 s.
 * - `seal`: the audit log PDF made on the main thread, signed: 60 s.
 * - `audit-pdf`: laying out and sealing the certificate of completion of an envelope with
 *   thousands of events: 120 s.
 * - `render`: drawing an envelope's fields into a document of hundreds of pages and sealing it,
 *   background work of the artefact job: 300 s.
 */
export const PDF_TASK_BUDGETS_MS: Record<PdfTaskKind, number> = {
  inspect: 10_000,
  'read-placements': 30_000,
  'apply-placements': 30_000,
  verify: 30_000,
  seal: 60_000,
  'audit-pdf': 120_000,
  render: 300_000,
  'prepare-signature': 300_000,
  'embed-signature': 60_000,
};

/** The turn of PDF work asked without a team (every caller in the service names one today; tools and tests may not). */
export const SERVICE_TEAM = '';

export const PDF_WORKER_DEFAULTS = {
  threads: Math.max(1, Math.min(4, os.availableParallelism() - 1)),
  maxQueue: 64,
  queueTimeoutMs: 30_000,
  // Ordinary files take milliseconds, hostile ones of 48 MB a few seconds: ten is generous.
  taskTimeoutMs: PDF_TASK_BUDGETS_MS.inspect,
  // The inspector keeps at most a 16 MB window, 32 MB of decoded stream and 16 MB of cached
  // object streams (outside the heap, as Buffers); what lives on the heap is the parsed objects.
  maxHeapMb: 128,
  // A loaded thread holds about 65 MB (heap and Buffers) between tasks; one that holds twice that
  // after a task (rendering a file of tens of MB, or pdf-lib's inflated object streams, up to
  // 1.5 × PDF_INFLATED_BYTES_LIMIT outside the heap) is replaced rather than kept holding it.
  recycleAboveMb: 128,
  // Threads start on the first task and end after two minutes without one: a loaded thread holds
  // about 55 MB of the process's resident memory (pdf-lib, fonts, its own heap), which a process
  // serving only reads should not carry. A file arriving after a quiet spell waits for a thread
  // to load (a few hundred ms; never charged to its time limit).
  idleExitMs: 120_000,
} as const;

/** The file needed more time or memory than one worker may spend on it. */
export class PdfWorkLimitError extends Error {
  readonly limit: 'time' | 'memory';
  readonly value: number;

  constructor(limit: 'time' | 'memory', value: number) {
    super(limit === 'time' ? `PDF work took longer than ${value} ms` : `PDF work needed more than ${value} MB of heap`);
    this.name = 'PdfWorkLimitError';
    this.limit = limit;
    this.value = value;
  }
}

/** No worker could take the file: the queue is full, or the file waited too long, or the pool is closing. */
export class PdfWorkersBusyError extends Error {
  readonly reason: 'queue_full' | 'queue_timeout' | 'closed';

  constructor(reason: 'queue_full' | 'queue_timeout' | 'closed') {
    super(`PDF workers unavailable (${reason})`);
    this.name = 'PdfWorkersBusyError';
    this.reason = reason;
  }
}

/**
 * Who a task is done for: `team`, the team's id (the fair queue's key; `SERVICE_TEAM` when
 * omitted), and `timeoutMs`, another budget than its kind's.
 */
export type PdfTaskOptions = {
  team?: string;
  timeoutMs?: number;
  /**
   * Where the task takes its place in its team's queue: behind the team's tasks queued before this
   * time (`Date.now()` milliseconds), ahead of those queued after it. Default: when it is queued.
   * A job of several tasks (a seal: each document, then the certificate) gives the time it started,
   * so its later tasks do not wait behind those of jobs started after it: jobs run side by side
   * finish in the order they started, rather than all of them late.
   */
  queuedSince?: number;
  /**
   * Signs the seal's digests when the task's seal material carries no key (a token's key:
   * SEAL_SIGNER=pkcs11): the worker asks, this thread signs, the worker gets the signature.
   */
  signDigest?: (digest: Uint8Array) => Promise<Uint8Array>;
};

export type PdfWorkers = {
  /** the inspector's `inspectPdfFile`, in a worker: same answers and `PdfInspectionError`s, plus the pool's errors. */
  inspect(filePath: string, options?: PdfTaskOptions): Promise<PdfInspection>;
  /**
   * Draws field values into a copy of a PDF (sealing it when asked) and writes it to
   * `outputPath`. Rendering a large envelope takes longer than inspecting a file: its own time limit.
   */
  render(task: Omit<RenderTask, 'kind'>, options?: PdfTaskOptions): Promise<{ byteSize: number }>;
  /** Draws the values not yet in a signer's file and adds its signature placeholder (issue 35); answers the digest of what it covers. */
  prepareSignature(task: Omit<PrepareSignatureTask, 'kind'>, options?: PdfTaskOptions): Promise<{ byteSize: number; contentDigest: Uint8Array }>;
  /** Writes a trust service's signature, in its CMS, into a prepared file's placeholder. */
  embedSignature(task: Omit<EmbedSignatureTask, 'kind'>, options?: PdfTaskOptions): Promise<{ byteSize: number }>;
  /** Lays out and seals the audit-log PDF into `outputPath`. */
  auditPdf(task: Omit<AuditPdfTask, 'kind'>, options?: PdfTaskOptions): Promise<{ byteSize: number }>;
  /** Checks a sealed PDF's signatures (pdf/verify.ts). */
  verify(filePath: string, ourCertificateSha256: string[], options?: PdfTaskOptions & { trustAnchors?: readonly Uint8Array[] }): Promise<PdfVerification>;
  /** Reads the text tags or the form fields of a PDF file (pdf/text-tags.ts, pdf/form-fields.ts). */
  readPlacements(task: Omit<ReadPlacementsTask, 'kind'>, options?: PdfTaskOptions): Promise<PlacementSources>;
  /**
   * Writes a copy of a PDF file without the given tags' text and form fields; answers the tags it
   * could not hide. A content stream nested past what the rewrite reads is `PdfInspectionError`
   * (`too_complex`).
   */
  applyPlacements(task: Omit<ApplyPlacementsTask, 'kind'>, options?: PdfTaskOptions): Promise<{ byteSize: number; notHidden: string[] }>;
  /** Seals a PDF file into `outputPath`. */
  seal(task: Omit<SealTask, 'kind'>, options?: PdfTaskOptions): Promise<{ byteSize: number }>;
  /** Threads taking tasks now (loading or loaded): none until the first task, none again after `idleExitMs` without one. */
  readonly threads: number;
  /** The most threads this pool runs at once (`threads` of its options): what sizes the seal jobs run at once (workers.ts). */
  readonly maxThreads: number;
  /** Ends every worker; waiting and running tasks are refused as busy (`closed`). */
  close(): Promise<void>;
};

type Pending = {
  task: PdfTask;
  team: string;
  /** Its place in the team's queue (`PdfTaskOptions.queuedSince`). */
  since: number;
  timeoutMs: number;
  signDigest?: (digest: Uint8Array) => Promise<Uint8Array>;
  resolve(answer: PdfTaskAnswer): void;
  reject(error: Error): void;
  queueTimer?: NodeJS.Timeout;
};

type Slot = {
  worker: Worker;
  /** Set once the worker has loaded its module: only such a worker is replaced when it dies. */
  ready: boolean;
  /**
   * The task this worker has taken. A worker still loading holds it unsent (`timer` unset): the
   * task is posted and its time limit starts only once the worker is ready, so a file is never
   * charged for a thread's start-up. `startTimer` bounds how long such a task waits for that.
   */
  running: { pending: Pending; timer: NodeJS.Timeout | undefined; startTimer: NodeJS.Timeout | undefined } | undefined;
  exited: Promise<void>;
  /** Ends the thread once it has been idle for `idleExitMs`; cleared when it takes a task. */
  idleTimer?: NodeJS.Timeout;
  /** Ended for idleness: not replaced when it exits. */
  endedIdle?: boolean;
};

type DistributiveOmit<T, K extends keyof T> = T extends unknown ? Omit<T, K> : never;

function written(answer: PdfTaskAnswer): { byteSize: number } {
  if (answer.outcome === 'written') return { byteSize: answer.byteSize };
  if (answer.outcome === 'failed') throw Object.assign(new Error(answer.message), { code: answer.code });
  throw new Error(`unexpected PDF worker answer: ${answer.outcome}`);
}

const workerUrl = new URL('./worker.ts', import.meta.url);

export function createPdfWorkerPool(options: PdfWorkerPoolOptions = {}): PdfWorkers {
  const settings = { ...PDF_WORKER_DEFAULTS, workerUrl, ...options };
  const budgetsMs: Record<PdfTaskKind, number> = { ...PDF_TASK_BUDGETS_MS, inspect: settings.taskTimeoutMs, ...options.budgetsMs };
  const maxThreadsPerTeam = Math.max(1, options.maxThreadsPerTeam ?? settings.threads - 1);
  /** Workers that take tasks. */
  const slots = new Set<Slot>();
  /** Every thread not yet exited, including those leaving the pool (what close() waits for). */
  const living = new Set<Slot>();
  /** Waiting tasks, per team: each team's in the order they came. */
  const queues = new Map<string, Pending[]>();
  /** Workers each team holds now (loading for it or working on its task). */
  const runningByTeam = new Map<string, number>();
  /**
   * The teams with work waiting or running, in the order they take turns: a team joins at the end
   * when it gets work and leaves when it has none left; `turn` is where the next look for a task
   * starts, just past the team served last. Every team with work is served once a round, and one
   * that joins waits at most a round, however many tasks the others have queued (a team that
   * joined to the front, as "never served", could be kept waiting by a stream of new teams).
   */
  const ring: string[] = [];
  let turn = 0;
  let nextTaskId = 1;
  let closed = false;

  function spawn(): Slot {
    const worker = new Worker(settings.workerUrl, {
      resourceLimits: { maxOldGenerationSizeMb: settings.maxHeapMb, maxYoungGenerationSizeMb: 16, stackSizeMb: 4 },
      // Run only the module; flags for the main thread (a larger heap, inspector ports) stay there.
      execArgv: [],
      name: 'pdf-worker',
    });
    let exitedResolve!: () => void;
    const slot: Slot = { worker, ready: false, running: undefined, exited: new Promise((resolve) => (exitedResolve = resolve)) };
    // Idle workers must not keep the process alive; a running task refs its worker.
    worker.unref();
    worker.on('message', (message: PdfWorkerReply | { ready: true } | SignDigestRequest) => {
      if ('signDigest' in message) {
        answerSignDigest(slot, message.signDigest);
        return;
      }
      if ('ready' in message) {
        slot.ready = true;
        if (slot.running !== undefined) start(slot);
        else endWhenIdle(slot);
        return;
      }
      const running = slot.running;
      if (running === undefined || running.pending.task.id !== message.id) return;
      finish(slot);
      const { memoryBytes, ...answer } = message;
      running.pending.resolve(answer);
      if (memoryBytes > settings.recycleAboveMb * 1024 * 1024) retire(slot);
      else {
        dispatchWaiting();
        if (slot.running === undefined) endWhenIdle(slot);
      }
    });
    worker.on('error', (error: Error & { code?: string }) => {
      // The thread is ending: from now on it takes no task, and one that had loaded is replaced
      // now rather than on 'exit', so the next file does not wait for this one to wind down.
      slots.delete(slot);
      const running = slot.running;
      if (running !== undefined) {
        finish(slot);
        running.pending.reject(error.code === 'ERR_WORKER_OUT_OF_MEMORY' ? new PdfWorkLimitError('memory', settings.maxHeapMb) : error);
      }
      if (slot.ready) replace();
    });
    worker.on('exit', () => {
      clearTimeout(slot.idleTimer);
      slots.delete(slot);
      living.delete(slot);
      const running = slot.running;
      if (running !== undefined) {
        finish(slot);
        running.pending.reject(closed ? new PdfWorkersBusyError('closed') : new Error('a PDF worker stopped unexpectedly'));
      }
      exitedResolve();
      // A worker that loaded and later died is replaced (usually already done, when it was
      // stopped for a limit or failed). One that never loaded is not: it would fail again, and in
      // a loop; the next task starts one and reports its failure.
      if (slot.ready && !slot.endedIdle) replace();
      else if (!closed) dispatchWaiting();
    });
    slots.add(slot);
    living.add(slot);
    return slot;
  }

  /**
   * Ends an idle worker that holds much memory after a large task (pdf-lib's buffers, outside the
   * heap, are only freed by a collection an idle thread may never run): ending the thread gives
   * it all back. Its replacement starts at once.
   */
  function retire(slot: Slot): void {
    slots.delete(slot);
    void slot.worker.terminate();
    replace();
  }

  /** A loaded thread with no task: it ends after `idleExitMs` unless a task comes first (`dispatch`). */
  function endWhenIdle(slot: Slot): void {
    clearTimeout(slot.idleTimer);
    slot.idleTimer = setTimeout(() => {
      if (slot.running !== undefined || !slots.has(slot)) return;
      slot.endedIdle = true;
      slots.delete(slot);
      void slot.worker.terminate();
    }, settings.idleExitMs);
    slot.idleTimer.unref();
  }

  /** Starts a thread in place of one that left the pool, and gives it the next waiting file. */
  function replace(): void {
    if (closed) return;
    if (slots.size < settings.threads) spawn();
    dispatchWaiting();
  }

  function finish(slot: Slot): void {
    if (slot.running === undefined) return;
    clearTimeout(slot.running.timer);
    clearTimeout(slot.running.startTimer);
    const { team } = slot.running.pending;
    slot.running = undefined;
    slot.worker.unref();
    const running = (runningByTeam.get(team) ?? 1) - 1;
    if (running > 0) runningByTeam.set(team, running);
    else runningByTeam.delete(team);
    forgetIfIdle(team);
  }

  function forgetIfIdle(team: string): void {
    if (runningByTeam.has(team) || queues.has(team)) return;
    const index = ring.indexOf(team);
    if (index === -1) return;
    ring.splice(index, 1);
    if (index < turn) turn--;
  }

  /** A loaded or loading worker with no task, or a new one when the pool has room. */
  function idleSlot(): Slot | undefined {
    for (const slot of slots) if (slot.running === undefined) return slot;
    return slots.size < settings.threads ? spawn() : undefined;
  }

  /** Where in the ring the next team to serve is: the first from `turn` on with a task waiting and under its share of workers. */
  function nextTeam(): number | undefined {
    for (let step = 0; step < ring.length; step++) {
      const index = (turn + step) % ring.length;
      const team = ring[index]!;
      if (queues.has(team) && (runningByTeam.get(team) ?? 0) < maxThreadsPerTeam) return index;
    }
    return undefined;
  }

  function takeNext(index: number): Pending {
    const team = ring[index]!;
    const waiting = queues.get(team)!;
    const pending = waiting.shift()!;
    if (waiting.length === 0) queues.delete(team);
    runningByTeam.set(team, (runningByTeam.get(team) ?? 0) + 1);
    turn = index + 1;
    return pending;
  }

  /**
   * Gives a file to a worker. A worker that is still loading (a replacement, or the pool's first
   * threads) keeps it until it is ready: the file waits, as in the queue, but is not charged.
   */
  function dispatch(slot: Slot, pending: Pending): void {
    clearTimeout(pending.queueTimer);
    clearTimeout(slot.idleTimer);
    slot.running = { pending, timer: undefined, startTimer: undefined };
    slot.worker.ref();
    settings.onTaskStart?.({ kind: pending.task.kind, team: pending.team });
    if (slot.ready) return start(slot);
    slot.running.startTimer = setTimeout(() => {
      // A thread that cannot load within the queue's waiting time: the file is refused as busy
      // and the thread ended (not replaced: the next file starts one).
      slots.delete(slot);
      finish(slot);
      pending.reject(new PdfWorkersBusyError('queue_timeout'));
      void slot.worker.terminate();
    }, settings.queueTimeoutMs);
  }

  /** The worker is ready: it takes the file now, and the file's time limit starts. */
  function start(slot: Slot): void {
    const running = slot.running!;
    clearTimeout(running.startTimer);
    running.startTimer = undefined;
    const { pending } = running;
    running.timer = setTimeout(() => {
      // The worker may be deep in synchronous parsing: only terminating the thread stops it.
      // It leaves the pool now, so no other file is sent to it while it ends, and its
      // replacement starts loading at once.
      slots.delete(slot);
      finish(slot);
      pending.reject(new PdfWorkLimitError('time', pending.timeoutMs));
      void slot.worker.terminate();
      replace();
    }, pending.timeoutMs);
    slot.worker.postMessage(pending.task);
  }

  function dispatchWaiting(): void {
    while (!closed) {
      const index = nextTeam();
      if (index === undefined) return;
      const slot = idleSlot();
      if (slot === undefined) return;
      dispatch(slot, takeNext(index));
    }
  }

  /**
   * A worker's request for a signature during its task: answered by the task's own signer, so a
   * request can only use the seal its task was given (a request for a task no longer running is
   * refused). Errors cross as message and code (`SEAL_SIGNER_UNAVAILABLE`), like the task's own.
   */
  function answerSignDigest(slot: Slot, request: SignDigestRequest['signDigest']): void {
    const pending = slot.running?.pending;
    const reply = (answer: SignDigestReply) => {
      // The thread may have ended meanwhile (its time limit): nobody is left to answer.
      if (slot.running?.pending === pending) slot.worker.postMessage(answer);
    };
    if (pending === undefined || pending.task.id !== request.taskId || pending.signDigest === undefined) {
      reply({ signedDigest: { requestId: request.requestId, error: 'no signer for this task', code: undefined } });
      return;
    }
    pending.signDigest(request.digest).then(
      (signature) => reply({ signedDigest: { requestId: request.requestId, signature } }),
      (error: Error & { code?: unknown }) => reply({ signedDigest: { requestId: request.requestId, error: error.message, code: typeof error.code === 'string' ? error.code : undefined } }),
    );
  }

  /**
   * A span per task, `pdf <kind>` (inspect, render, seal, audit-pdf, verify), from submission to
   * answer: the waiting in the queue and the thread's work (no context crosses into the thread).
   */
  function submit(task: DistributiveOmit<PdfTask, 'id'>, options: PdfTaskOptions = {}): Promise<PdfTaskAnswer> {
    const sealed = 'seal' in task && task.seal !== undefined;
    const timeoutMs = options.timeoutMs ?? budgetsMs[task.kind];
    return withSpan(`pdf ${task.kind}`, { 'pdf.task': task.kind, 'pdf.sealed': sealed }, async (span) => {
      const answer = await queueTask(task, { team: options.team ?? SERVICE_TEAM, timeoutMs, signDigest: options.signDigest, since: options.queuedSince ?? Date.now() });
      // A refusal is the file's fault (an invalid upload); a failure is the work's.
      span.setAttribute('pdf.outcome', answer.outcome);
      if (answer.outcome === 'failed') recordFailure(span, new Error(answer.message));
      return answer;
    });
  }

  /**
   * Queues a task behind its own team's, and lets the fair order pick what runs next. A team's
   * queue is bounded (`maxQueue`), not the pool's: a team that fills its own gets `queue_full`,
   * while another team's task still finds a place.
   */
  function queueTask(task: DistributiveOmit<PdfTask, 'id'>, queued: Pick<Pending, 'team' | 'timeoutMs' | 'signDigest' | 'since'>): Promise<PdfTaskAnswer> {
    const { team, timeoutMs, signDigest, since } = queued;
    return new Promise<PdfTaskAnswer>((resolve, reject) => {
      if (closed) return reject(new PdfWorkersBusyError('closed'));
      const pending: Pending = { task: { ...task, id: nextTaskId++ } as PdfTask, team, since, timeoutMs, signDigest, resolve, reject };
      const waiting = queues.get(team) ?? [];
      // Room for it to start at once: the worker it would take is free and its team under its share.
      const startsNow = waiting.length === 0 && (runningByTeam.get(team) ?? 0) < maxThreadsPerTeam && hasRoom();
      if (!startsNow && waiting.length >= settings.maxQueue) return reject(new PdfWorkersBusyError('queue_full'));
      // Behind every task of the team queued at or before its time (usually: at the end).
      let at = waiting.length;
      while (at > 0 && waiting[at - 1]!.since > since) at--;
      waiting.splice(at, 0, pending);
      queues.set(team, waiting);
      if (!ring.includes(team)) ring.push(team);
      dispatchWaiting();
      if (!queues.get(team)?.includes(pending)) return;
      pending.queueTimer = setTimeout(() => {
        const queued = queues.get(team);
        const index = queued?.indexOf(pending) ?? -1;
        if (index === -1) return;
        queued!.splice(index, 1);
        if (queued!.length === 0) queues.delete(team);
        forgetIfIdle(team);
        reject(new PdfWorkersBusyError('queue_timeout'));
      }, settings.queueTimeoutMs);
    });
  }

  /** A worker is free, or one more may start. */
  function hasRoom(): boolean {
    if (slots.size < settings.threads) return true;
    for (const slot of slots) if (slot.running === undefined) return true;
    return false;
  }

  // No thread starts until there is PDF work (idleExitMs above says why).
  return {
    get threads() {
      return slots.size;
    },
    maxThreads: settings.threads,
    async inspect(filePath, options) {
      const answer = await submit({ kind: 'inspect', path: filePath }, options);
      if (answer.outcome === 'done') return answer.inspection;
      if (answer.outcome === 'refused') throw new PdfInspectionError(answer.reason, answer.detail, answer.complexity);
      if (answer.outcome === 'failed') throw Object.assign(new Error(answer.message), { code: answer.code });
      throw new Error(`unexpected PDF worker answer: ${answer.outcome}`);
    },
    async render(task, options) {
      return written(await submit({ ...task, kind: 'render' }, options));
    },
    async prepareSignature(task, options) {
      const answer = await submit({ ...task, kind: 'prepare-signature' }, options);
      if (answer.outcome === 'prepared') return { byteSize: answer.byteSize, contentDigest: answer.contentDigest };
      if (answer.outcome === 'failed') throw Object.assign(new Error(answer.message), { code: answer.code });
      throw new Error(`unexpected PDF worker answer: ${answer.outcome}`);
    },
    async embedSignature(task, options) {
      return written(await submit({ ...task, kind: 'embed-signature' }, options));
    },
    async auditPdf(task, options) {
      return written(await submit({ ...task, kind: 'audit-pdf' }, options));
    },
    async verify(filePath, ourCertificateSha256, options) {
      const answer = await submit(
        { kind: 'verify', path: filePath, ourCertificateSha256, trustAnchors: options?.trustAnchors === undefined ? undefined : [...options.trustAnchors] },
        options,
      );
      if (answer.outcome === 'verified') return answer.verification;
      if (answer.outcome === 'failed') throw Object.assign(new Error(answer.message), { code: answer.code });
      throw new Error(`unexpected PDF worker answer: ${answer.outcome}`);
    },
    async readPlacements(task, options) {
      const answer = await submit({ ...task, kind: 'read-placements' }, options);
      if (answer.outcome === 'placements') return answer.sources;
      if (answer.outcome === 'failed') throw Object.assign(new Error(answer.message), { code: answer.code });
      throw new Error(`unexpected PDF worker answer: ${answer.outcome}`);
    },
    async applyPlacements(task, options) {
      const answer = await submit({ ...task, kind: 'apply-placements' }, options);
      if (answer.outcome === 'placed') return { byteSize: answer.byteSize, notHidden: answer.notHidden };
      if (answer.outcome === 'refused') throw new PdfInspectionError(answer.reason, answer.detail, answer.complexity);
      if (answer.outcome === 'failed') throw Object.assign(new Error(answer.message), { code: answer.code });
      throw new Error(`unexpected PDF worker answer: ${answer.outcome}`);
    },
    async seal(task, options) {
      return written(await submit({ ...task, kind: 'seal' }, options));
    },
    async close() {
      if (closed) return;
      closed = true;
      for (const waiting of queues.values()) {
        for (const pending of waiting) {
          clearTimeout(pending.queueTimer);
          pending.reject(new PdfWorkersBusyError('closed'));
        }
      }
      queues.clear();
      const exits = [...living].map((slot) => slot.exited);
      for (const slot of living) void slot.worker.terminate();
      await Promise.all(exits);
    },
  };
}
