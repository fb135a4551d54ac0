import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKeyInFlight } from '../src/http/key-in-flight.ts';
import { restClient, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';

/*
 * READS_IN_FLIGHT_PER_KEY (src/http/key-in-flight.ts): a key's REST reads beyond its share wait
 * their turn, in order; nothing is refused, and another key never waits for them. How much this
 * spares the other teams under a flood is measured by `npm run bench:fairness`, not here.
 */

/** Whether a promise has settled by the time the current microtasks have run. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(() => (done = true));
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

describe('reads in flight per key', () => {
  it('lets a key run its share at once, queues the rest in order, and never holds another key back', async () => {
    const gate = createKeyInFlight(2);
    const first = await gate.enter('a');
    const second = await gate.enter('a');
    const started: string[] = [];
    const third = gate.enter('a').then((release) => (started.push('third'), release));
    const fourth = gate.enter('a').then((release) => (started.push('fourth'), release));
    expect(await settled(third)).toBe(false);
    expect(gate.state('a')).toEqual({ running: 2, waiting: 2 });
    // Another key starts at once although the first one's reads wait.
    const other = await gate.enter('b');
    expect(gate.state('b')).toEqual({ running: 1, waiting: 0 });
    first();
    // Released twice: still one slot given back.
    first();
    const thirdRelease = await third;
    expect(started).toEqual(['third']);
    expect(await settled(fourth)).toBe(false);
    second();
    const fourthRelease = await fourth;
    expect(started).toEqual(['third', 'fourth']);
    thirdRelease();
    fourthRelease();
    other();
    expect(gate.state('a')).toEqual({ running: 0, waiting: 0 });
    expect(gate.state('b')).toEqual({ running: 0, waiting: 0 });
  });

  it('with 0, caps nothing', async () => {
    const gate = createKeyInFlight(0);
    const releases = await Promise.all(Array.from({ length: 50 }, () => gate.enter('a')));
    expect(releases).toHaveLength(50);
    expect(gate.state('a')).toEqual({ running: 0, waiting: 0 });
  });
});

describe('a key reading on many connections at once (READS_IN_FLIGHT_PER_KEY=1)', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ env: { READS_IN_FLIGHT_PER_KEY: '1' } });
  });
  afterAll(async () => {
    await app.close();
  });

  it('gets every answer, the same as one at a time, and nothing refused; its writes and another team are answered meanwhile', async () => {
    const team = await seedTeam(app);
    const other = await seedTeam(app);
    const client = restClient(app, team.apiKey);
    const built = (await client.post('/envelopes', { name: 'Read at once' })).body.payload;
    const alone = await client.get(`/envelopes/${built.envelopeId}`);
    expect(alone.status).toBe(200);
    const [reads, write, otherRead] = await Promise.all([
      Promise.all(Array.from({ length: 12 }, () => client.get(`/envelopes/${built.envelopeId}`))),
      client.post('/envelopes', { name: 'Written meanwhile' }),
      restClient(app, other.apiKey).get('/envelopes?limit=1'),
    ]);
    for (const read of reads) {
      expect(read.status).toBe(200);
      expect(read.body.payload).toEqual(alone.body.payload);
    }
    expect(write.status).toBe(200);
    expect(otherRead.status).toBe(200);
  });
});
