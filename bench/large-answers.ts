/**
 * Resident memory around large answers, side by side: the service started as `npm start` starts
 * it, and the same start command without `--expose-gc` (so without the idle memory trim of
 * src/memory-trim.ts: what Node does on its own). Each serves repeated GraphQL requests that build
 * answers of several MiB (pages of 100 nested envelopes under four aliases) and full REST
 * envelopes, then idles for 45 s (the trim waits for 30 s of quiet). Prints RSS before, at its
 * peak, right after and while idling.
 *
 *   npm run bench:memory [-- --requests 60 --concurrency 4]
 * Uses DATABASE_URL's server (default 127.0.0.1:5432) for a scratch database.
 */
import { parseArgs } from 'node:util';
import { printResult, QUICK, QUICK_OPTION } from './report.ts';
import { createScratch, type RunningService, rssMiB } from './scratch-service.ts';

const { values } = parseArgs({ options: { requests: { type: 'string' }, concurrency: { type: 'string', default: '4' }, ...QUICK_OPTION } });
// Quick: a handful of requests and one idle reading after a second.
const requests = Number(values.requests ?? (QUICK ? '8' : '60'));
const concurrency = Number(values.concurrency);
const IDLE_READINGS_AT_SECONDS = QUICK ? [1] : [5, 10, 20, 30, 45];

const envelopeSelection = `id name status context createdAt updatedAt
  documents { id name pages { index width height } }
  recipients { id identifier roleName agents { id kind info { name email } } }
  fields { id identifier type recipientId views { documentId page location { x y } size { width height } } }`;
// Four aliases of a 100-envelope page: near the largest answer the cost limit lets one request build.
const largeQuery = `{ ${[1, 2, 3, 4].map((alias) => `page${alias}: envelopes(first: 100) { nodes { ${envelopeSelection} } }`).join(' ')} }`;

type Reading = { before: number; peak: number; rightAfter: number; idle: number[]; seconds: number; answerBytes: number };

async function measure(service: RunningService, apiKey: string): Promise<Reading> {
  const headers = { 'content-type': 'application/json', 'x-service-api-key': apiKey };
  const envelopeIds: string[] = (await (await fetch(`${service.url}/api/v1/key/envelopes?limit=100`, { headers })).json()).payload.envelopes.map((envelope: { id: string }) => envelope.id);
  await new Promise((resolve) => setTimeout(resolve, QUICK ? 200 : 2000));
  const pid = service.child.pid!;
  const before = rssMiB(pid);
  let peak = before;
  const sampler = setInterval(() => {
    try {
      peak = Math.max(peak, rssMiB(pid));
    } catch {
      // the exit listener says why; the request loop fails next
    }
  }, 20);
  let answerBytes = 0;
  let sent = 0;
  const started = Date.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (sent < requests) {
        sent += 1;
        const response =
          sent % 2 === 0
            ? await fetch(`${service.url}/graphql`, { method: 'POST', headers, body: JSON.stringify({ query: largeQuery }) })
            : await fetch(`${service.url}/api/v1/key/envelopes/${envelopeIds[sent % envelopeIds.length]}?includeDocuments=true&includeRecipients=true&includeFields=true`, { headers });
        const body = await response.text();
        if (!response.ok || body.includes('"errors"')) throw new Error(`${response.status}: ${body.slice(0, 300)}`);
        answerBytes = Math.max(answerBytes, body.length);
      }
    }),
  );
  const seconds = (Date.now() - started) / 1000;
  clearInterval(sampler);
  const rightAfter = rssMiB(pid);
  const idle: number[] = [];
  let waited = 0;
  for (const second of IDLE_READINGS_AT_SECONDS) {
    await new Promise((resolve) => setTimeout(resolve, (second - waited) * 1000));
    waited = second;
    idle.push(rssMiB(pid));
  }
  return { before, peak, rightAfter, idle, seconds, answerBytes };
}

const scratch = await createScratch('memory');
try {
  let team: { teamId: string; apiKey: string } | undefined;
  const rows: string[] = [];
  const kept: number[] = [];
  for (const [label, leaveOutFlags] of [
    ['npm start', []],
    ['npm start without --expose-gc (no idle trim)', ['--expose-gc']],
  ] as const) {
    const service = await scratch.startService(label.replace(/\W+/g, '-'), {}, { leaveOutFlags: [...leaveOutFlags] });
    if (!team) {
      // The first service has applied the migrations; seed once, both read the same data.
      team = await scratch.createTeam();
      // 100 envelopes, each with 30 fields of 4 views: about 2 MiB of JSON per page.
      await scratch.seedEnvelopes(team.teamId, QUICK ? 10 : 100, { fieldsPerRecipient: 10, viewsPerField: 4 });
    }
    const reading = await measure(service, team.apiKey);
    service.child.removeAllListeners('exit');
    service.child.kill('SIGTERM');
    console.log(
      `${label}: ${requests} requests (${concurrency} at a time, half GraphQL of ${(reading.answerBytes / 1048576).toFixed(1)} MiB, half full REST envelopes) in ${reading.seconds.toFixed(1)} s`,
    );
    kept.push(reading.idle[reading.idle.length - 1] - reading.before);
    rows.push(
      `| ${label} | ${reading.before.toFixed(0)} | ${reading.peak.toFixed(0)} | ${reading.rightAfter.toFixed(0)} | ${reading.idle.map((value) => value.toFixed(0)).join(' | ')} | ${kept.at(-1)!.toFixed(0)} |`,
    );
  }
  console.log(
    `| service | RSS before MiB | peak | right after | ${IDLE_READINGS_AT_SECONDS.map((second) => `idle ${second} s`).join(' | ')} | kept after ${IDLE_READINGS_AT_SECONDS.at(-1)} s MiB |`,
  );
  console.log(`|---|---:|---:|---:|${IDLE_READINGS_AT_SECONDS.map(() => '---:').join('|')}|---:|`);
  for (const row of rows) console.log(row);
  printResult('memory_kept_after_idle_mib', kept[0]);
  printResult('memory_kept_after_idle_without_trim_mib', kept[1]);
} finally {
  await scratch.close();
}
