import http from 'node:http';

/** One request a recording server received: its headers, its raw body and the body parsed as JSON. */
export type RecordedRequest = { headers: http.IncomingHttpHeaders; body: string; json: any };

export type RecordingServer = {
  /** `http://127.0.0.1:<port><path>`. */
  url: string;
  /** Every request so far, in arrival order. */
  received: RecordedRequest[];
  /** The status each request is answered with (may be replaced while the server runs). */
  respond: (request: RecordedRequest) => number;
  close(): Promise<void>;
};

/**
 * A local HTTP endpoint on a free port that records every JSON request and answers with
 * `respond`'s status: a webhook receiver, or an SMS/WhatsApp provider.
 */
export async function startRecordingServer(respond: (request: RecordedRequest) => number = () => 200, path = '/'): Promise<RecordingServer> {
  const received: RecordedRequest[] = [];
  const recorder: RecordingServer = { url: '', received, respond, close: async () => undefined };
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const entry = { headers: request.headers, body, json: JSON.parse(body) };
      received.push(entry);
      response.statusCode = recorder.respond(entry);
      response.end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  recorder.url = `http://127.0.0.1:${(server.address() as { port: number }).port}${path}`;
  recorder.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return recorder;
}
