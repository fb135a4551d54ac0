/**
 * CPU of one process's threads by name, from /proc/<pid>/task/<tid>/stat. The service runs its PDF
 * work in worker threads named `pdf-worker` (src/domain/pdf/worker-pool.ts) inside its own
 * process, so "service" and "PDF workers" are told apart by thread, not by process.
 *
 * A thread's time stays visible only while it lives (once it exits, the kernel folds it into the
 * process's total, not under its name): the threads are sampled every `intervalMs`, and a thread
 * that exits loses at most its last interval to the process's remainder. The pool replaces a
 * worker only after a task that left it holding over 128 MB, which these small documents never do.
 */
import fs from 'node:fs';
import { CLOCK_TICKS } from '../reads/processes.ts';

type ThreadSeen = { name: string; baseline: number; last: number };

export type ThreadSampler = {
  /** Starts a window: the CPU counted from now on. */
  mark(): void;
  /** CPU milliseconds since `mark()` of the threads whose name `matches`. */
  cpuMsOf(matches: (name: string) => boolean): number;
  stop(): void;
};

function readThread(pid: number, tid: string): { name: string; ticks: number } | null {
  try {
    const text = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    const open = text.indexOf('(');
    const close = text.lastIndexOf(')');
    const fields = text.slice(close + 2).split(' ');
    return { name: text.slice(open + 1, close), ticks: Number(fields[11]) + Number(fields[12]) };
  } catch {
    return null; // exited between listing and reading
  }
}

export function sampleThreads(pid: number, intervalMs = 100): ThreadSampler {
  const threads = new Map<string, ThreadSeen>();
  const sample = () => {
    let tids: string[];
    try {
      tids = fs.readdirSync(`/proc/${pid}/task`);
    } catch {
      return; // the process is gone
    }
    for (const tid of tids) {
      const now = readThread(pid, tid);
      if (!now) continue;
      const seen = threads.get(tid);
      // A thread first seen inside the window started inside it: all its time counts.
      if (seen) seen.last = now.ticks;
      else threads.set(tid, { name: now.name, baseline: 0, last: now.ticks });
    }
  };
  sample();
  const timer = setInterval(sample, intervalMs);
  timer.unref();
  return {
    mark() {
      sample();
      for (const seen of threads.values()) seen.baseline = seen.last;
    },
    cpuMsOf(matches) {
      sample();
      let ticks = 0;
      for (const seen of threads.values()) if (matches(seen.name)) ticks += seen.last - seen.baseline;
      return (ticks * 1000) / CLOCK_TICKS;
    },
    stop: () => clearInterval(timer),
  };
}
