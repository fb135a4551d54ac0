/**
 * The service as a real process for the fault suite: started as `npm start` starts it (the same
 * Node flags and environment settings, read from package.json), on any database (a private
 * cluster the test may stop), with a data directory the test owns so that a process killed with
 * SIGKILL can be started again on the same files. Unlike test/helpers/process.ts, the outbox
 * workers run (every fault test has a database of its own).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** npm start's environment assignments and node arguments (flags and the entry file). */
export function startCommand(): { env: Record<string, string>; args: string[] } {
  const { scripts } = JSON.parse(fs.readFileSync(path.resolve('package.json'), 'utf8')) as { scripts: Record<string, string> };
  const words = scripts.start!.split(/\s+/).filter(Boolean);
  const nodeAt = words.indexOf('node');
  return { env: Object.fromEntries(words.slice(0, nodeAt).map((word) => word.split('=') as [string, string])), args: words.slice(nodeAt + 1) };
}

export type LogLine = { level: number; msg: string; [key: string]: unknown };

export type ServiceProcess = {
  url: string;
  pid: number;
  dataDir: string;
  child: ChildProcess;
  output(): string;
  /** Its JSON log lines so far. */
  lines(): LogLine[];
  /** Lines logged as `unexpected error` (what callers saw as Server.Internal). */
  unexpectedErrors(): LogLine[];
  waitForLog(predicate: (line: LogLine) => boolean, timeoutMs?: number): Promise<LogLine>;
  /** Resolves with the exit code and signal once the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  isRunning(): boolean;
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** SIGTERM, and SIGKILL if it has not exited after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
};

export const FAULTS_AUDIT_KEY = 'faults-audit-key-0123456789abcdef0123456789';

/** `nodeFlags` go before npm start's own (e.g. --trace-gc while investigating). */
export async function startService(options: { databaseUrl: string; dataDir?: string; env?: Record<string, string>; nodeFlags?: string[] }): Promise<ServiceProcess> {
  const dataDir = options.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'envelope-faults-data-'));
  const start = startCommand();
  const child = spawn(process.execPath, [...(options.nodeFlags ?? []), ...start.args], {
    env: {
      ...process.env,
      ...start.env,
      DATABASE_URL: options.databaseUrl,
      PORT: '0',
      DATA_DIR: dataDir,
      LOG_LEVEL: 'info',
      AUDIT_HMAC_KEY: FAULTS_AUDIT_KEY,
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let running = true;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => {
      running = false;
      resolve({ code, signal });
    }),
  );
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const lines = (): LogLine[] =>
    output
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .flatMap((line) => {
        try {
          return [JSON.parse(line) as LogLine];
        } catch {
          return [];
        }
      });
  const waitForLog = async (predicate: (line: LogLine) => boolean, timeoutMs = 30_000): Promise<LogLine> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = lines().find(predicate);
      if (found) return found;
      if (!running) throw new Error(`the service exited before the expected log line:\n${output.slice(-4000)}`);
      if (Date.now() > deadline) throw new Error(`timed out waiting for a log line:\n${output.slice(-4000)}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  let listening: LogLine;
  try {
    listening = await waitForLog((line) => typeof line.address === 'string', 60_000);
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  return {
    url: listening.address as string,
    pid: child.pid!,
    dataDir,
    child,
    output: () => output,
    lines,
    unexpectedErrors: () => lines().filter((line) => line.msg === 'unexpected error'),
    waitForLog,
    exited,
    isRunning: () => running,
    async kill(signal: NodeJS.Signals = 'SIGTERM') {
      if (!running) return;
      child.kill(signal);
      await exited;
    },
    async stop(graceMs = 15_000) {
      if (!running) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Resident memory (VmRSS) of a process, in MiB. */
export function rssMiB(pid: number): number {
  const line = fs
    .readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith('VmRSS:'));
  return Number(line?.split(/\s+/)[1] ?? 0) / 1024;
}

/** Open file descriptors of a process (sockets, files, pipes). */
export function openFds(pid: number): number {
  return fs.readdirSync(`/proc/${pid}/fd`).length;
}
