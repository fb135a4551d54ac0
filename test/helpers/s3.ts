import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

export const TEST_BUCKET = 'envelope-blobs';

/** A real S3-protocol server (s3rver) on a random port with a temporary directory; stop and start it again on the same port and directory. */
export type TestS3 = {
  port: number;
  directory: string;
  /** The service's variables for this server: BLOB_STORE_URL, S3_ENDPOINT, S3_FORCE_PATH_STYLE. */
  env: Record<string, string>;
  stop(): Promise<void>;
  start(): Promise<void>;
  /** SIGSTOP: the process stays, its connections stay open, the kernel still accepts new ones, and nothing is answered. */
  hang(): void;
  /** SIGCONT after `hang`. */
  resume(): void;
  close(): Promise<void>;
};

const s3rverPath = createRequire(import.meta.url).resolve('s3rver');

/**
 * s3rver runs in a child process, as an object store runs apart from the service: its own
 * memory (it gathers a multipart upload's parts in memory to complete it) is not counted by the
 * tests that measure what the service holds, and its work does not share the test's event loop.
 */
function serverScript(port: number, directory: string): string {
  return `
    const S3rver = require(${JSON.stringify(s3rverPath)});
    const server = new S3rver({ address: '127.0.0.1', port: ${port}, directory: ${JSON.stringify(directory)}, silent: true, configureBuckets: [{ name: ${JSON.stringify(TEST_BUCKET)} }] });
    server.run().then(({ port }) => process.stdout.write('listening ' + port + '\\n'), (error) => { console.error(error); process.exit(1); });
  `;
}

export async function startTestS3(): Promise<TestS3> {
  // s3rver's fixed credentials, read by the SDK's standard chain as in production.
  process.env.AWS_ACCESS_KEY_ID = 'S3RVER';
  process.env.AWS_SECRET_ACCESS_KEY = 'S3RVER';
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 's3rver-'));
  let port = 0;
  let child: ChildProcess | undefined;
  const start = async () => {
    const started = spawn(process.execPath, ['-e', serverScript(port, directory)], { stdio: ['ignore', 'pipe', 'inherit'] });
    child = started;
    port = await new Promise<number>((resolve, reject) => {
      let output = '';
      started.stdout!.on('data', (chunk: Buffer) => {
        output += chunk.toString('utf8');
        const listening = /listening (\d+)/.exec(output);
        if (listening) resolve(Number(listening[1]));
      });
      started.once('exit', (code) => reject(new Error(`s3rver exited (${code}) before listening: ${output}`)));
    });
  };
  const stop = async () => {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null) return;
    // Killed, not closed: open keep-alive connections of the SDK end with it, as when a store goes down.
    await new Promise<void>((resolve) => {
      running.once('exit', () => resolve());
      running.kill('SIGKILL');
    });
  };
  await start();
  return {
    port,
    directory,
    env: { BLOB_STORE_URL: `s3://${TEST_BUCKET}`, S3_ENDPOINT: `http://127.0.0.1:${port}`, S3_FORCE_PATH_STYLE: 'true' },
    stop,
    start,
    hang: () => child?.kill('SIGSTOP'),
    resume: () => child?.kill('SIGCONT'),
    async close() {
      child?.kill('SIGCONT');
      await stop();
      fs.rmSync(directory, { recursive: true, force: true });
    },
  };
}
