/**
 * Probes `<url>/healthz` every `everyMs` from a process of its own (so that the load generator's
 * own event loop does not delay the probe), printing one JSON line per probe: the time it was
 * sent, how long the answer took, and its status (0: no answer within 10 s).
 *
 *   node test/helpers/healthz-prober.ts <url> [everyMs]
 *
 * A fresh connection per probe, as a load balancer's health check makes.
 */
import http from 'node:http';

const [url, every] = process.argv.slice(2);
const everyMs = Number(every ?? 100);
const agent = new http.Agent({ keepAlive: false });

function probe(): Promise<{ status: number }> {
  return new Promise((resolve) => {
    const request = http.get(`${url}/healthz`, { agent, timeout: 10_000 }, (response) => {
      response.resume();
      response.on('end', () => resolve({ status: response.statusCode ?? 0 }));
    });
    request.on('timeout', () => request.destroy(new Error('timeout')));
    request.on('error', () => resolve({ status: 0 }));
  });
}

for (;;) {
  const at = Date.now();
  const started = performance.now();
  const { status } = await probe();
  process.stdout.write(`${JSON.stringify({ at, ms: Math.round((performance.now() - started) * 10) / 10, status })}\n`);
  await new Promise((resolve) => setTimeout(resolve, everyMs));
}
