import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeClassicXrefPdf, makePdf } from './fixtures/pdfs.ts';
import { createDraftWithDocumentAndSigner } from './helpers/envelopes.ts';
import { restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';

/*
 * A seeded, time-bounded fuzz run over what parses caller bytes: the REST JSON bodies, the
 * multipart upload path and the PDF inspector behind it, and GraphQL request bodies. Every input
 * is derived from FUZZ_SEED (printed on failure, so a failing input can be replayed), the run
 * stops after FUZZ_SECONDS (8 by default in the suite; run longer with e.g.
 * `FUZZ_SECONDS=600 FUZZ_SEED=7 npx vitest run test/fuzz.test.ts`), after at least MIN_REQUESTS.
 * The properties: no answer is a 5xx, and a refused request changes nothing. (How long an answer
 * takes is not one: a loaded machine would fail it; the stall checks are bench/event-loop.ts.)
 */

const seed = Number(process.env.FUZZ_SEED ?? 20261122);
const seconds = Number(process.env.FUZZ_SECONDS ?? 8);
const MIN_REQUESTS = 25;

/** mulberry32: small, fast, good enough to spread inputs; deterministic per seed. */
function random(seedValue: number) {
  let state = seedValue >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (below: number) => Math.floor(next() * below),
    pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)],
  };
}
type Random = ReturnType<typeof random>;

const interestingStrings = ['', ' ', '\u0000', '\ud800', '\u202e', 'é', '𝄞', '"', '\\', '{}', '[]', 'null', 'a'.repeat(300), '__proto__', 'constructor', '%00', '../../etc/passwd'];
const interestingNumbers = [0, -1, 1, 2 ** 31, -(2 ** 53), 1e308, 0.5, Number.MAX_SAFE_INTEGER];

function fuzzValue(rng: Random, depth: number): unknown {
  switch (rng.int(depth > 3 ? 4 : 7)) {
    case 0:
      return rng.pick(interestingStrings);
    case 1:
      return rng.pick(interestingNumbers);
    case 2:
      return rng.pick([true, false, null]);
    case 3:
      return String.fromCharCode(...Array.from({ length: rng.int(12) }, () => rng.int(0x3000)));
    case 4:
      return Array.from({ length: rng.int(4) }, () => fuzzValue(rng, depth + 1));
    default:
      return Object.fromEntries(Array.from({ length: rng.int(5) }, () => [rng.pick([...interestingStrings, 'name', 'context', 'type', 'views', 'agents']), fuzzValue(rng, depth + 1)]));
  }
}

/** A plausible body for a route, then mutated: keys dropped, values swapped for odd ones. */
function fuzzBody(rng: Random, base: Record<string, unknown>): unknown {
  const body: Record<string, unknown> = structuredClone(base);
  for (let mutation = 0; mutation < 1 + rng.int(3); mutation += 1) {
    const keys = Object.keys(body);
    const action = rng.int(3);
    if (action === 0 && keys.length > 0) delete body[rng.pick(keys)];
    else if (action === 1 && keys.length > 0) body[rng.pick(keys)] = fuzzValue(rng, 1);
    else body[rng.pick(interestingStrings) || 'extra'] = fuzzValue(rng, 1);
  }
  return rng.int(10) === 0 ? fuzzValue(rng, 0) : body;
}

/** Raw body bytes: valid JSON most of the time, otherwise cut, doubled or with a byte flipped. */
function fuzzJsonText(rng: Random, value: unknown): string {
  const text = JSON.stringify(value) ?? 'null';
  switch (rng.int(6)) {
    case 0:
      return text.slice(0, rng.int(text.length + 1));
    case 1: {
      const at = rng.int(text.length + 1);
      return text.slice(0, at) + rng.pick(['{', '}', ',', '"', '\u0000', ']', '\\u12']) + text.slice(at);
    }
    default:
      return text;
  }
}

/** A PDF with bytes flipped, a span removed or garbage appended: the inspector must refuse or accept it cleanly. */
function fuzzPdf(rng: Random, pdf: Uint8Array): Uint8Array {
  const bytes = new Uint8Array(pdf);
  switch (rng.int(4)) {
    case 0:
      for (let flips = 0; flips < 1 + rng.int(8); flips += 1) bytes[rng.int(bytes.length)] = rng.int(256);
      return bytes;
    case 1: {
      const start = rng.int(bytes.length);
      return new Uint8Array([...bytes.slice(0, start), ...bytes.slice(start + 1 + rng.int(200))]);
    }
    case 2:
      return bytes.slice(0, rng.int(bytes.length));
    default:
      return new Uint8Array([...bytes, ...Array.from({ length: rng.int(512) }, () => rng.int(256))]);
  }
}

let app: TestApp;
beforeAll(async () => {
  // The fuzzer sends far more than a key's per-minute budget; rate limits have their own tests.
  app = await startTestApp({ env: { RATE_LIMIT_PER_MINUTE: '0' } });
});
afterAll(async () => {
  await app.close();
});

/** Row counts of everything a refused request must not have changed, for the caller's team. */
async function stateOf(team: SeededTeam) {
  const [row] = await app.orm.em.fork().execute<Record<string, number>[]>(
    `select (select count(*)::int from envelope where team_id = ?) as envelopes,
            (select count(*)::int from document d join envelope e on e.id = d.envelope_id where e.team_id = ?) as documents,
            (select count(*)::int from recipient r join envelope e on e.id = r.envelope_id where e.team_id = ?) as recipients,
            (select count(*)::int from field f join envelope e on e.id = f.envelope_id where e.team_id = ?) as fields,
            (select count(*)::int from contact where team_id = ?) as contacts,
            (select count(*)::int from audit_event where team_id = ?) as audit_events`,
    Array(6).fill(team.teamId),
  );
  return row;
}

describe(`fuzzing the parsers (seed ${seed}, ${seconds} s)`, () => {
  it('never answers 5xx, and a refusal changes nothing', { timeout: (seconds + 60) * 1000 }, async () => {
    const rng = random(seed);
    const team = await seedTeam(app);
    const draft = await createDraftWithDocumentAndSigner(app, team.apiKey);
    const pdfs = [await makePdf({ pages: 2 }), await makeClassicXrefPdf({ pages: 1 })];
    const url = (path: string) => `${app.url}/api/v1/key${path}`;
    const bases: { path: string; body: Record<string, unknown> }[] = [
      { path: '/envelopes', body: { name: 'Fuzzed', expirationPeriodDays: 14, context: { a: 1 } } },
      { path: `/envelopes/${draft.envelopeId}/recipients`, body: { recipient: { type: 'signer', identifier: 'fz', roleName: 'Fuzz', agents: [{ info: { name: 'Ada' } }] } } },
      {
        path: `/envelopes/${draft.envelopeId}/fields`,
        body: {
          fields: [
            { type: 'text', recipientId: draft.signerId, identifier: 'fz', views: [{ documentId: draft.documentId, page: 0, location: { x: 1, y: 1 }, size: { width: 10, height: 10 } }] },
          ],
        },
      },
      { path: '/contacts', body: { name: 'Fuzz', email: 'fuzz@example.com' } },
    ];
    // How long to fuzz (FUZZ_SECONDS), not a bound on anything: no answer is timed here.
    const deadline = Date.now() + seconds * 1000;
    let requests = 0;
    const failures: string[] = [];
    // At least MIN_REQUESTS however slow a busy machine is, then as many as the time allows.
    while ((Date.now() < deadline || requests < MIN_REQUESTS) && failures.length === 0) {
      const kind = rng.int(4);
      const before = await stateOf(team);
      let response: Response;
      let input: string;
      if (kind === 0 || kind === 1) {
        const base = rng.pick(bases);
        const text = fuzzJsonText(rng, fuzzBody(rng, base.body));
        input = `POST ${base.path} ${text.slice(0, 300)}`;
        response = await fetch(url(base.path), {
          method: rng.int(5) === 0 ? 'PATCH' : 'POST',
          headers: { 'x-service-api-key': team.apiKey, 'content-type': rng.pick(['application/json', 'application/json', 'text/plain', 'application/x-www-form-urlencoded']) },
          body: text,
        });
      } else if (kind === 2) {
        const pdf = fuzzPdf(rng, rng.pick(pdfs));
        const form = new FormData();
        form.append('document', new Blob([pdf as Uint8Array<ArrayBuffer>], { type: 'application/pdf' }), rng.pick(['a.pdf', 'é.pdf', '', '\u202e.pdf']));
        if (rng.int(2) === 0) form.append(rng.pick(['name', 'order', 'context', 'x']), String(fuzzValue(rng, 2)));
        input = `upload ${pdf.length} bytes`;
        response = await fetch(url(`/envelopes/${draft.envelopeId}/documents`), { method: 'POST', headers: { 'x-service-api-key': team.apiKey }, body: form });
      } else {
        const text = fuzzJsonText(rng, fuzzBody(rng, { query: 'mutation($input: CreateEnvelopeInput!) { createEnvelope(input: $input) { id } }', variables: { input: { name: 'Fz' } } }));
        input = `graphql ${text.slice(0, 300)}`;
        response = await fetch(`${app.url}/graphql`, { method: 'POST', headers: { 'x-service-api-key': team.apiKey, 'content-type': 'application/json' }, body: text });
      }
      const answer = await response.text();
      requests += 1;
      if (response.status >= 500) failures.push(`${response.status} for ${input}: ${answer.slice(0, 300)}`);
      const refused = response.status >= 400 || (kind === 3 && answer.includes('"errors"') && !answer.includes('"id"'));
      if (refused) {
        const after = await stateOf(team);
        if (JSON.stringify(after) !== JSON.stringify(before)) failures.push(`refused (${response.status}) yet changed ${JSON.stringify(before)} → ${JSON.stringify(after)}: ${input}`);
      }
    }
    expect(failures, `seed ${seed} after ${requests} requests`).toEqual([]);
    // Still serving normally afterwards.
    expect((await restClient(app, team.apiKey).get(`/envelopes/${draft.envelopeId}`)).status).toBe(200);
  });
});
