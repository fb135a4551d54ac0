import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { inject } from 'vitest';
import { runInstanceEnvironment, type TestApp } from './harness.ts';

export type ServerProcess = {
  url: string;
  /** Everything the process wrote (its JSON log lines), so far. */
  output(): string;
  environment: NodeJS.ProcessEnv;
  stop(): Promise<void>;
};

/**
 * Starts `src/main.ts` as its own process on the run's PostgreSQL server (another instance beside
 * the test app, with the run's audit key and seal) and resolves once it listens.
 */
export async function startServerProcess(app: TestApp, env: Record<string, string> = {}): Promise<ServerProcess> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'envelope-process-'));
  const environment = {
    ...process.env,
    DATABASE_URL: inject('databaseUrl'),
    PORT: '0',
    DATA_DIR: dataDir,
    LOG_LEVEL: 'info',
    // No outbox worker: on the shared test database it would take other test files' jobs.
    OUTBOX_WORKER: 'false',
    ...runInstanceEnvironment(dataDir),
    ...env,
  };
  const server = spawn(process.execPath, ['src/main.ts'], { env: environment, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  server.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise((resolve) => server.once('exit', resolve));
  const stop = async () => {
    server.kill('SIGTERM');
    await exited;
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the server did not start:\n${output}`)), 30_000);
      server.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        const match = /"address":"(http:\/\/[^"]+)"/.exec(output);
        if (match) {
          clearTimeout(timer);
          resolve(match[1]);
        }
      });
    });
    return { url, output: () => output, environment, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
