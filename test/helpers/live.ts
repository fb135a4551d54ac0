import { createClient as createSseClient } from 'graphql-sse';
import { createClient as createWsClient } from 'graphql-ws';
import WebSocket from 'ws';
import type { TestApp } from './harness.ts';

export type LiveResult = { data?: any; errors?: any[]; status?: number };

export type Transport = 'ws' | 'sse' | 'graphql-sse' | 'graphql-sse-single';
/** graphql-ws over WebSocket, SSE by hand, and the graphql-sse client in both of its modes. */
export const TRANSPORTS: Transport[] = ['ws', 'sse', 'graphql-sse', 'graphql-sse-single'];

/**
 * One open subscription seen from the client: every result it received, in order, and whether
 * the server ended it. `next(n)` waits until at least n results arrived.
 */
export type Watcher = {
  results: LiveResult[];
  /** Resolves when the stream ended (completed, or cut). */
  ended: Promise<void>;
  isEnded(): boolean;
  waitFor(count: number, timeoutMs?: number): Promise<LiveResult[]>;
  close(): Promise<void>;
};

function watcherOf(iterator: AsyncIterator<LiveResult>, stop: () => void | Promise<void>): Watcher {
  const results: LiveResult[] = [];
  let ended = false;
  let closing = false;
  let wake: (() => void) | undefined;
  const endedPromise = (async () => {
    try {
      for (;;) {
        const next = await iterator.next();
        if (next.done) break;
        results.push(next.value);
        wake?.();
      }
    } catch (error) {
      // A client told to stop may report its own abort: that is not something the server said.
      if (closing) return;
      // graphql-sse refuses a non-2xx answer (an authentication failure is a 401): its body is the GraphQL result.
      const response = (error as { response?: Response }).response;
      const body = response ? await response.text().catch(() => '') : '';
      try {
        // The body is the event stream itself (a `next` event with the errors, then `complete`).
        const data = /^data: (\{.*)$/m.exec(body)?.[1] ?? body;
        results.push({ ...(JSON.parse(data) as LiveResult), status: response?.status });
      } catch {
        results.push({ errors: [{ message: String(error), extensions: { code: 'Client.Error' } }] });
      }
    } finally {
      ended = true;
      wake?.();
    }
  })();
  return {
    results,
    ended: endedPromise,
    isEnded: () => ended,
    async waitFor(count, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      while (results.length < count) {
        if (ended) throw new Error(`stream ended after ${results.length} results, ${count} expected: ${JSON.stringify(results)}`);
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`timed out after ${results.length} results, ${count} expected: ${JSON.stringify(results)}`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
      return results;
    },
    async close() {
      closing = true;
      await stop();
      await Promise.race([endedPromise, new Promise((resolve) => setTimeout(resolve, 2_000))]);
    },
  };
}

/** GraphQL over SSE by hand: a POST with `Accept: text/event-stream`, the stream parsed event by event. */
async function* sseOverFetch(url: string, headers: Record<string, string>, body: unknown, signal: AbortSignal): AsyncGenerator<LiveResult> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...headers },
    body: JSON.stringify(body),
    signal,
  });
  if (!response.body) throw new Error(`no body (${response.status})`);
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      for (let end = buffer.indexOf('\n\n'); end !== -1; end = buffer.indexOf('\n\n')) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let event = 'message';
        const data: string[] = [];
        for (const line of block.split('\n')) {
          if (line.startsWith('event:')) event = line.slice(6).trim();
          else if (line.startsWith('data:')) data.push(line.slice(5).trim());
        }
        if (event === 'complete') return;
        if (data.length > 0 && data.join('') !== '') yield JSON.parse(data.join('\n')) as LiveResult;
      }
    }
  } catch (error) {
    if (signal.aborted) return;
    throw error;
  }
}

export type Credentials = { apiKey?: string; signingToken?: string };

function headersFor(credentials: Credentials): Record<string, string> {
  return {
    ...(credentials.apiKey ? { 'X-Service-Api-Key': credentials.apiKey } : {}),
    ...(credentials.signingToken ? { 'X-Signing-Token': credentials.signingToken } : {}),
  };
}

/** Opens a subscription with a real client of the transport. */
export function subscribe(app: Pick<TestApp, 'url'>, transport: Transport, credentials: Credentials, query: string, variables: Record<string, unknown> = {}): Watcher {
  const url = `${app.url}/graphql`;
  if (transport === 'ws') {
    const client = createWsClient({
      url: url.replace(/^http/, 'ws'),
      webSocketImpl: WebSocket,
      connectionParams: headersFor(credentials),
      retryAttempts: 0,
      lazy: true,
    });
    const iterator = client.iterate({ query, variables }) as AsyncIterableIterator<LiveResult>;
    return watcherOf(iterator, async () => {
      await iterator.return?.();
      await client.dispose();
    });
  }
  if (transport === 'graphql-sse-single') {
    const client = createSseClient({ url: `${url}/stream`, headers: headersFor(credentials), singleConnection: true, retryAttempts: 0, lazy: true });
    const iterator = client.iterate({ query, variables }) as AsyncIterableIterator<LiveResult>;
    return watcherOf(iterator, async () => {
      await iterator.return?.();
      client.dispose();
    });
  }
  if (transport === 'graphql-sse') {
    const client = createSseClient({ url, headers: headersFor(credentials), singleConnection: false, retryAttempts: 0 });
    const iterator = client.iterate({ query, variables }) as AsyncIterableIterator<LiveResult>;
    return watcherOf(iterator, async () => {
      await iterator.return?.();
      client.dispose();
    });
  }
  const controller = new AbortController();
  return watcherOf(sseOverFetch(url, headersFor(credentials), { query, variables }, controller.signal), () => controller.abort());
}

export const STATUS_CHANGED = `subscription($envelopeId: ID) { envelopeStatusChanged(envelopeId: $envelopeId) { envelopeId sequence type status at } }`;
export const ENVELOPE_EVENTS = `subscription($envelopeId: ID!, $afterSequence: Int) { envelopeEvents(envelopeId: $envelopeId, afterSequence: $afterSequence) { envelopeId sequence type status at } }`;

/** Waits until the hub has `count` watchers (a subscription is live once its watcher is registered and its catch-up read is done). */
export async function untilWatching(app: TestApp, count: number, timeoutMs = 30_000): Promise<void> {
  const hub = app.dependencies.envelopeEvents!;
  const deadline = Date.now() + timeoutMs;
  while (hub.watcherCount < count) {
    if (Date.now() > deadline) throw new Error(`only ${hub.watcherCount} watchers, ${count} expected`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
