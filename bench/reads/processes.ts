/**
 * Child processes and what /proc says about them: each server under test runs in its own
 * process so its CPU time and memory can be read without counting the load generator.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';

/** Clock ticks per second of /proc/<pid>/stat's time fields (100 on Linux almost everywhere). */
export const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/**
 * `count` distinct ports nobody listens on right now: the kernel picks them, and all are held
 * open together before any is released, so two servers started side by side never get the same
 * one.
 */
export async function freePorts(count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<net.Server>((resolve, reject) => {
          const server = net.createServer();
          server.once('error', reject);
          server.listen(0, '127.0.0.1', () => resolve(server));
        }),
    ),
  );
  const ports = servers.map((server) => (server.address() as net.AddressInfo).port);
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  return ports;
}

export async function freePort(): Promise<number> {
  return (await freePorts(1))[0];
}

type Stat = { pid: number; ppid: number; ticks: number; childTicks: number };

function readStat(pid: number | string): Stat | null {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null; // exited between listing and reading
  }
  // The command name (field 2) is in parentheses and may contain spaces: split after the last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // Relative to field 3 (state): ppid is field 4, utime 14, stime 15, cutime 16, cstime 17.
  return {
    pid: Number(pid),
    ppid: Number(fields[1]),
    ticks: Number(fields[11]) + Number(fields[12]),
    childTicks: Number(fields[13]) + Number(fields[14]),
  };
}

/** CPU milliseconds (user + system, all threads) the process has used so far. */
export function processCpuMs(pid: number): number {
  const stat = readStat(pid);
  if (!stat) throw new Error(`process ${pid} is gone`);
  return (stat.ticks * 1000) / CLOCK_TICKS;
}

/**
 * CPU milliseconds of a PostgreSQL cluster so far: the postmaster, every live child (backends,
 * background writer, WAL writer, ...), and children that already exited (the kernel adds a reaped
 * child's time to its parent's cutime/cstime), so a connection closed inside the window still
 * counts.
 */
export function clusterCpuMs(postmasterPid: number): number {
  const postmaster = readStat(postmasterPid);
  if (!postmaster) throw new Error(`postmaster ${postmasterPid} is gone`);
  let ticks = postmaster.ticks + postmaster.childTicks;
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readStat(entry);
    if (stat && stat.ppid === postmasterPid) ticks += stat.ticks;
  }
  return (ticks * 1000) / CLOCK_TICKS;
}

/** Peak resident memory of the process since it started (VmHWM), in bytes. */
export function peakRssBytes(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = /VmHWM:\s+(\d+) kB/.exec(status);
  return match ? Number(match[1]) * 1024 : 0;
}

export type Child = {
  name: string;
  process: ChildProcess;
  pid: number;
  /** The last lines it printed, for error messages. */
  output(): string;
  stop(): Promise<void>;
};

/**
 * Starts a Node child in its own process group, so a Ctrl-C in the terminal reaches only the
 * benchmark, which then stops its children in order instead of all of them dying at once.
 */
export function startChild(name: string, args: string[], env: Record<string, string | undefined>, options: { cwd?: string } = {}): Child {
  const child = spawn(process.execPath, args, {
    cwd: options.cwd,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let tail = '';
  const keep = (chunk: Buffer) => {
    tail = (tail + chunk.toString()).slice(-8000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let stopping = false;
  return {
    name,
    process: child,
    pid: child.pid!,
    output: () => tail,
    async stop() {
      if (stopping) return exited;
      stopping = true;
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Polls `url` until it answers 200, failing early with the child's output when it exits. */
export async function waitForHttp(child: Child, url: string, init: RequestInit = {}, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.process.exitCode !== null || child.process.signalCode !== null) {
      throw new Error(`${child.name} exited before answering:\n${child.output()}`);
    }
    try {
      const response = await fetch(url, init);
      await response.arrayBuffer();
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${child.name} did not answer ${url} within ${timeoutMs / 1000} s:\n${child.output()}`);
}

/**
 * Waits until a server and the cluster are idle: less than 2 clock ticks of CPU between them in
 * a 250 ms window. autocannon stops at its deadline with requests still in flight; without this
 * their remaining work (in the server and in PostgreSQL) would land in the next pass's window.
 */
export async function settle(pid: number, postmasterPid: number, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const busy = () => processCpuMs(pid) + clusterCpuMs(postmasterPid);
  let before = busy();
  while (Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    const now = busy();
    if (now - before < (2 * 1000) / CLOCK_TICKS) return;
    before = now;
  }
  throw new Error(`process ${pid} and PostgreSQL did not go idle within ${timeoutMs / 1000} s`);
}
