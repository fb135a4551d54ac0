import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { BODY_TIMEOUTS, guardRequestBody } from '../src/http/body-guard.ts';

describe('the body guard on kept-alive connections', () => {
  it('lets go of each request when its answer is done: a socket serving many requests keeps no listeners for them', async () => {
    const sockets: Socket[] = [];
    const server = http.createServer((request, response) => {
      guardRequestBody(request, response, BODY_TIMEOUTS);
      request.resume();
      request.on('end', () => response.end('ok'));
    });
    server.on('connection', (socket) => sockets.push(socket));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const post = () =>
      new Promise<void>((resolve, reject) => {
        const request = http.request({ port, host: '127.0.0.1', method: 'POST', path: '/', agent, headers: { 'content-type': 'application/json' } }, (response) => {
          response.resume();
          response.on('end', resolve);
        });
        request.on('error', reject);
        request.end(JSON.stringify({ hello: 'world' }));
      });
    try {
      await post();
      const afterOne = sockets[0].listenerCount('close');
      for (let index = 0; index < 50; index += 1) await post();
      expect(sockets).toHaveLength(1);
      // Before the fix every request left two 'close' listeners (holding it and its answer) behind.
      expect(sockets[0].listenerCount('close')).toBeLessThanOrEqual(afterOne);
    } finally {
      agent.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
