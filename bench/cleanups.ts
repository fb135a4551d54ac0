/**
 * What a bench started, stopped exactly once in reverse order: at the end, on failure, and on
 * Ctrl-C or SIGTERM (the servers run in their own process groups, so a Ctrl-C reaches only the
 * bench, which stops them). A failing step is reported and the next one still runs.
 */
import type { Child } from './reads/processes.ts';

export type Cleanups = {
  add(label: string, run: () => Promise<void> | void): void;
  /** Registers a started process's stop and hands the process back. */
  track(child: Child): Child;
  run(): Promise<void>;
  /** Whether a signal started the clean-up: the failures that follow are only its consequence. */
  readonly interrupted: boolean;
};

export function cleanupsOnExit(log: (line: string) => void, whatStops: string): Cleanups {
  const steps: { label: string; run: () => Promise<void> | void }[] = [];
  let running: Promise<void> | undefined;
  let interrupted = false;
  const run = () =>
    (running ??= (async () => {
      for (const step of steps.reverse()) {
        try {
          await step.run();
        } catch (error) {
          console.error(`clean-up (${step.label}) failed: ${(error as Error).message}`);
        }
      }
    })());
  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const) {
    process.on(signal, () => {
      interrupted = true;
      log(`\n${signal}: ${whatStops}`);
      void run().then(() => process.exit(code));
    });
  }
  return {
    add: (label, stepRun) => void steps.push({ label, run: stepRun }),
    track(child) {
      steps.push({ label: child.name, run: () => child.stop() });
      return child;
    },
    run,
    get interrupted() {
      return interrupted;
    },
  };
}
