import net from 'node:net';

export type RawAnswer = {
  /** HTTP status of the answer; undefined when the connection ended without one. */
  status: number | undefined;
  headers: Record<string, string>;
  body: any;
  /** Body bytes the client had handed to its socket when the first byte of the answer arrived. */
  bytesSentBeforeAnswer: number;
  /** Body bytes the client handed to its socket in all. */
  bytesSent: number;
  /** The connection ended with a reset (ECONNRESET/EPIPE) before a complete answer was read. */
  reset: boolean;
  /** The server closed the connection (FIN) after its answer. */
  closedByServer: boolean;
  /** Milliseconds from the request's first byte to the first byte of the answer. */
  answeredAfterMs: number | undefined;
};

export type RawBodyPlan = {
  /** Sent right after the request head (e.g. the start of a multipart body). */
  head?: Buffer | string;
  /** Filler bytes after `head`, sent in `chunkBytes` pieces until the answer arrives. */
  fillerBytes: number;
  /** Sent after the filler (e.g. the end of a multipart body). */
  tail?: Buffer | string;
  chunkBytes?: number;
  /** Pause between pieces; 0 writes as fast as the socket accepts. */
  intervalMs?: number;
  /** Send with Transfer-Encoding: chunked instead of Content-Length. */
  chunked?: boolean;
  /** Declared Content-Length (defaults to the real length); ignored when chunked. */
  contentLength?: number;
  /** Stop writing after this many body bytes and wait (a stalled client). */
  stallAfterBytes?: number;
};

/**
 * A hand-written HTTP/1.1 client on a raw socket. It writes the body piece by piece and stops as
 * soon as any answer byte arrives, so a test can tell how much of a body the server waited for
 * before answering (fetch would hide that: it sends the whole body, or reports only a reset).
 */
export function rawRequest(baseUrl: string, options: { method?: string; path: string; headers: Record<string, string>; body: RawBodyPlan; timeoutMs?: number }): Promise<RawAnswer> {
  const url = new URL(baseUrl);
  const plan = options.body;
  const head = typeof plan.head === 'string' ? Buffer.from(plan.head) : (plan.head ?? Buffer.alloc(0));
  const tail = typeof plan.tail === 'string' ? Buffer.from(plan.tail) : (plan.tail ?? Buffer.alloc(0));
  const totalBytes = head.length + plan.fillerBytes + tail.length;
  const chunkBytes = plan.chunkBytes ?? 64 * 1024;
  const lines = [`${options.method ?? 'POST'} ${options.path} HTTP/1.1`, `host: ${url.host}`];
  for (const [name, value] of Object.entries(options.headers)) lines.push(`${name}: ${value}`);
  lines.push(plan.chunked ? 'transfer-encoding: chunked' : `content-length: ${plan.contentLength ?? totalBytes}`);
  const requestHead = Buffer.from(`${lines.join('\r\n')}\r\n\r\n`);

  return new Promise((resolve) => {
    const socket = net.connect({ host: url.hostname, port: Number(url.port) });
    const received: Buffer[] = [];
    let bytesSent = 0;
    let bytesSentBeforeAnswer: number | undefined;
    let answeredAfterMs: number | undefined;
    let reset = false;
    let closedByServer = false;
    let stopped = false;
    let startedAt = 0;
    const timer = setTimeout(() => finish(), options.timeoutMs ?? 20_000);

    function piece(offset: number, length: number): Buffer {
      const out = Buffer.alloc(length, 0x41);
      // Copy the parts of head and tail that fall into [offset, offset + length).
      for (const [part, start] of [
        [head, 0],
        [tail, head.length + plan.fillerBytes],
      ] as const) {
        const from = Math.max(offset, start);
        const to = Math.min(offset + length, start + part.length);
        if (from < to) part.copy(out, from - offset, from - start, to - start);
      }
      return out;
    }

    async function writeBody() {
      let offset = 0;
      while (!stopped && offset < totalBytes) {
        if (plan.stallAfterBytes !== undefined && offset >= plan.stallAfterBytes) return;
        const length = Math.min(chunkBytes, totalBytes - offset, plan.stallAfterBytes === undefined ? Infinity : plan.stallAfterBytes - offset);
        const data = piece(offset, length);
        const framed = plan.chunked ? Buffer.concat([Buffer.from(`${length.toString(16)}\r\n`), data, Buffer.from('\r\n')]) : data;
        const flushed = socket.write(framed);
        bytesSent += length;
        offset += length;
        if (!flushed)
          await new Promise<void>((done) => {
            const onDrain = () => {
              socket.off('close', onDrain);
              done();
            };
            socket.once('drain', onDrain);
            socket.once('close', onDrain);
          });
        if (plan.intervalMs) await new Promise((done) => setTimeout(done, plan.intervalMs));
      }
      if (!stopped && plan.chunked && offset >= totalBytes) socket.write('0\r\n\r\n');
    }

    function parse(): { status: number | undefined; headers: Record<string, string>; body: any; complete: boolean } {
      const raw = Buffer.concat(received);
      const split = raw.indexOf('\r\n\r\n');
      if (split < 0) return { status: undefined, headers: {}, body: undefined, complete: false };
      const [statusLine, ...headerLines] = raw.subarray(0, split).toString('latin1').split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of headerLines) {
        const colon = line.indexOf(':');
        headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      let bodyBytes = raw.subarray(split + 4);
      let complete = false;
      if (headers['content-length'] !== undefined) {
        complete = bodyBytes.length >= Number(headers['content-length']);
        bodyBytes = bodyBytes.subarray(0, Number(headers['content-length']));
      } else if (headers['transfer-encoding'] === 'chunked') {
        const pieces: Buffer[] = [];
        let rest = bodyBytes;
        for (;;) {
          const lineEnd = rest.indexOf('\r\n');
          if (lineEnd < 0) break;
          const size = Number.parseInt(rest.subarray(0, lineEnd).toString(), 16);
          if (size === 0) {
            complete = true;
            break;
          }
          if (rest.length < lineEnd + 2 + size + 2) break;
          pieces.push(rest.subarray(lineEnd + 2, lineEnd + 2 + size));
          rest = rest.subarray(lineEnd + 2 + size + 2);
        }
        bodyBytes = Buffer.concat(pieces);
      }
      const text = bodyBytes.toString('utf8');
      let body: any = text;
      try {
        body = JSON.parse(text);
      } catch {
        // not JSON (or not complete)
      }
      return { status: Number(statusLine.split(' ')[1]), headers, body, complete };
    }

    function finish() {
      if (stopped && (socket.destroyed || socket.closed)) {
        // already finished
      }
      stopped = true;
      clearTimeout(timer);
      socket.destroy();
      const parsed = parse();
      resolve({
        status: parsed.status,
        headers: parsed.headers,
        body: parsed.body,
        bytesSentBeforeAnswer: bytesSentBeforeAnswer ?? bytesSent,
        bytesSent,
        reset: reset && !parsed.complete,
        closedByServer,
        answeredAfterMs,
      });
    }

    socket.on('data', (chunk) => {
      if (bytesSentBeforeAnswer === undefined) {
        bytesSentBeforeAnswer = bytesSent;
        answeredAfterMs = Date.now() - startedAt;
        // A client that reads the early answer stops sending, as curl and browsers do.
        stopped = true;
      }
      received.push(chunk);
      const parsed = parse();
      // Give the server a moment to close after its answer, so the test can see it did.
      if (parsed.complete) setTimeout(finish, 300);
    });
    socket.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ECONNRESET' || error.code === 'EPIPE') reset = true;
      finish();
    });
    socket.on('end', () => {
      closedByServer = true;
      finish();
    });
    socket.on('connect', () => {
      startedAt = Date.now();
      socket.write(requestHead);
      writeBody().catch(() => finish());
    });
  });
}
