import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type IdleMemoryTrim, startIdleMemoryTrim } from '../src/http/memory-trim.ts';
import { createLogger } from '../src/shared/logger.ts';

// The trim's contract: a collection only once the server is idle (nothing in flight for idleMs)
// and only after growth; never while an answer is being written.
describe('idle memory trim', () => {
  let server: http.Server | undefined;
  let trim: IdleMemoryTrim | undefined;
  afterEach(async () => {
    trim?.stop();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  });

  async function startServer(handler: http.RequestListener): Promise<string> {
    server = http.createServer(handler);
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', () => resolve()));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  it('collects only after the server has been idle for idleMs, never while a request is in flight', async () => {
    let finishSlowAnswer: () => void = () => {};
    let arrivedAt: number | undefined;
    const url = await startServer((request, response) => {
      if (request.url === '/slow') {
        arrivedAt = Date.now();
        finishSlowAnswer = () => response.end('done');
        return;
      }
      response.end('ok');
    });
    const collections: number[] = [];
    // No growth threshold, so the test does not depend on this process's allocations.
    trim = startIdleMemoryTrim({
      server: server!,
      logger: createLogger('silent'),
      idleMs: 100,
      growthBytes: -Infinity,
      checkEveryMs: 20,
      collectGarbage: () => collections.push(Date.now()),
    });
    const slow = fetch(`${url}/slow`);
    // The server was idle until the request arrived (on a loaded machine that can take longer than
    // idleMs, and a collection then is right): only what follows its arrival is judged.
    await vi.waitFor(() => expect(arrivedAt).toBeDefined(), { timeout: 20_000, interval: 10 });
    await sleep(300);
    expect(collections.filter((at) => at >= arrivedAt!)).toEqual([]);
    const finishedAt = Date.now();
    finishSlowAnswer();
    await (await slow).text();
    await vi.waitFor(() => expect(collections.filter((at) => at >= finishedAt).length).toBeGreaterThanOrEqual(1), { timeout: 20_000, interval: 20 });
    // Judged by when each collection ran, not by looking at a moment: a busy machine may delay
    // this test's own timers past idleMs, never bring the trim's collection before it.
    expect(Math.min(...collections.filter((at) => at >= arrivedAt!)) - finishedAt).toBeGreaterThanOrEqual(100 - 2);
  });

  it('does not collect when memory has not grown past the threshold', async () => {
    const url = await startServer((_request, response) => response.end('ok'));
    const collections: number[] = [];
    trim = startIdleMemoryTrim({
      server: server!,
      logger: createLogger('silent'),
      idleMs: 50,
      growthBytes: 1024 * 1024 * 1024,
      checkEveryMs: 20,
      collectGarbage: () => collections.push(Date.now()),
    });
    await (await fetch(url)).text();
    await sleep(300);
    expect(collections).toHaveLength(0);
  });
});
