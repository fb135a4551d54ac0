/**
 * Resident memory around large answers: the service (started as `npm start` starts it) serves
 * repeated GraphQL requests that each build an answer of several MiB (pages of 100 nested
 * envelopes under several aliases) and large REST pages, then idles. Prints RSS before, at its
 * peak and after, and the answer sizes, so "memory returns near its baseline" is a number.
 *
 *   npm run bench:memory [-- --requests 60 --concurrency 4]
 * Uses DATABASE_URL's server (default 127.0.0.1:5432) for a scratch database.
 */
import { parseArgs } from 'node:util';
import { createScratch, rssMiB } from './scratch-service.ts';

const { values } = parseArgs({ options: { requests: { type: 'string', default: '60' }, concurrency: { type: 'string', default: '4' } } });
const requests = Number(values.requests);
const concurrency = Number(values.concurrency);

const envelopeSelection = `id name status context createdAt updatedAt
  documents { id name pages { index width height } }
  recipients { id identifier roleName agents { id kind info { name email } } }
  fields { id identifier type recipientId views { documentId page location { x y } size { width height } } }`;
// Five aliases of a 100-envelope page: the largest answer the limits let one request build.
const largeQuery = `{ ${[1, 2, 3, 4, 5].map((alias) => `page${alias}: envelopes(first: 100) { nodes { ${envelopeSelection} } }`).join(' ')} }`;

const scratch = await createScratch('memory');
try {
  const service = await scratch.startService('service');
  const team = await scratch.createTeam();
  // 100 envelopes, each with 30 fields of 4 views: about 1 MiB of JSON per page.
  await scratch.seedEnvelopes(team.teamId, 100, { fieldsPerRecipient: 10, viewsPerField: 4 });
  const headers = { 'content-type': 'application/json', 'x-service-api-key': team.apiKey };
  const small = await fetch(`${service.url}/api/v1/key/envelopes?limit=1`, { headers });
  if (!small.ok) throw new Error(`service answered ${small.status}`);
  await new Promise((resolve) => setTimeout(resolve, 2000));
  const pid = service.child.pid!;
  const before = rssMiB(pid);

  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, rssMiB(pid))), 20);
  let answerBytes = 0;
  let sent = 0;
  const started = Date.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (sent < requests) {
        sent += 1;
        const graphql = sent % 2 === 0;
        const response = graphql
          ? await fetch(`${service.url}/graphql`, { method: 'POST', headers, body: JSON.stringify({ query: largeQuery }) })
          : await fetch(`${service.url}/api/v1/key/envelopes/${(await (await fetch(`${service.url}/api/v1/key/envelopes?limit=100`, { headers })).json()).payload.envelopes[sent % 100].id}?includeDocuments=true&includeRecipients=true&includeFields=true`, { headers });
        const body = await response.text();
        if (!response.ok || body.includes('"errors"')) throw new Error(`${response.status}: ${body.slice(0, 300)}`);
        answerBytes = Math.max(answerBytes, body.length);
      }
    }),
  );
  const seconds = (Date.now() - started) / 1000;
  const afterLoad = rssMiB(pid);
  await new Promise((resolve) => setTimeout(resolve, 10_000));
  clearInterval(sampler);
  const afterIdle = rssMiB(pid);

  console.log(`${requests} requests (${concurrency} at a time, half GraphQL of ${(answerBytes / 1048576).toFixed(1)} MiB each, half full REST envelopes) in ${seconds.toFixed(1)} s`);
  console.log('| RSS before MiB | RSS peak MiB | RSS right after MiB | RSS after 10 s idle MiB | growth kept MiB |');
  console.log('|---|---|---|---|---|');
  console.log(`| ${before.toFixed(0)} | ${peak.toFixed(0)} | ${afterLoad.toFixed(0)} | ${afterIdle.toFixed(0)} | ${(afterIdle - before).toFixed(0)} |`);
} finally {
  await scratch.close();
}
