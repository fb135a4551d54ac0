import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import S3rver from 's3rver';

export const TEST_BUCKET = 'envelope-blobs';

/** A real S3-protocol server (s3rver) on a random port with a temporary directory; stop and start it again on the same port and directory. */
export type TestS3 = {
  port: number;
  directory: string;
  /** The service's variables for this server: BLOB_STORE_URL, S3_ENDPOINT, S3_FORCE_PATH_STYLE. */
  env: Record<string, string>;
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
};

export async function startTestS3(): Promise<TestS3> {
  // s3rver's fixed credentials, read by the SDK's standard chain as in production.
  process.env.AWS_ACCESS_KEY_ID = 'S3RVER';
  process.env.AWS_SECRET_ACCESS_KEY = 'S3RVER';
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 's3rver-'));
  let port = 0;
  let server: S3rver | undefined;
  const start = async () => {
    server = new S3rver({ address: '127.0.0.1', port, directory, silent: true, configureBuckets: [{ name: TEST_BUCKET }] });
    port = (await server.run()).port;
  };
  const stop = async () => {
    const running = server;
    server = undefined;
    if (!running) return;
    const closed = running.close();
    // Keep-alive connections of the SDK would hold close() open.
    running.httpServer.closeAllConnections();
    await closed;
  };
  await start();
  return {
    port,
    directory,
    env: { BLOB_STORE_URL: `s3://${TEST_BUCKET}`, S3_ENDPOINT: `http://127.0.0.1:${port}`, S3_FORCE_PATH_STYLE: 'true' },
    stop,
    start,
    async close() {
      await stop();
      fs.rmSync(directory, { recursive: true, force: true });
    },
  };
}
