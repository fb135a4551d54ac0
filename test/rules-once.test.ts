/**
 * Each rule in one place (issue 34): the rules that were written several times, each now one
 * function with its unit test, and a grep over src/ that fails when a copy comes back.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentPersonSqlText, peopleOf } from '../src/domain/recipient/agent-people.ts';
import { ensureNotPastExpiry, isExpiredAt, isPastExpiry } from '../src/domain/signing/expiry.ts';
import { startTestApp, type TestApp } from './helpers/harness.ts';

const sourceRoot = path.resolve(import.meta.dirname, '..', 'src');

function sourceFiles(directory: string): string[] {
  return fs.readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(directory, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return /\.(ts|js)$/.test(entry.name) ? [full] : [];
  });
}

/** The files under src/ (relative) with a line matching `pattern`. */
function filesMatching(pattern: RegExp): string[] {
  return sourceFiles(sourceRoot)
    .filter((file) =>
      fs
        .readFileSync(file, 'utf8')
        .split('\n')
        .some((line) => pattern.test(line)),
    )
    .map((file) => path.relative(sourceRoot, file).split(path.sep).join('/'))
    .sort();
}

describe('"past expiresAt": one function, one name', () => {
  const at = new Date('2026-01-10T00:00:00.000Z');
  it('is past at and after expiresAt, never without one', () => {
    expect(isPastExpiry(at, new Date(at.getTime() - 1))).toBe(false);
    expect(isPastExpiry(at, at)).toBe(true);
    expect(isPastExpiry(at.toISOString(), new Date(at.getTime() + 1))).toBe(true);
    expect(isPastExpiry(null, at)).toBe(false);
    expect(isExpiredAt({ status: 'expired', expiresAt: null }, at)).toBe(true);
    expect(isExpiredAt({ status: 'sent', expiresAt: at.toISOString() }, at)).toBe(true);
    expect(isExpiredAt({ status: 'sent', expiresAt: at.toISOString() }, new Date(at.getTime() - 1))).toBe(false);
  });

  it('refuses as Envelope.Closed with status expired, the answer after the sweep', () => {
    expect(() => ensureNotPastExpiry({ id: 'e', expiresAt: at }, at)).toThrow(expect.objectContaining({ name: 'Envelope.Closed', context: expect.objectContaining({ status: 'expired' }) }));
    expect(() => ensureNotPastExpiry({ id: 'e', expiresAt: null }, at)).not.toThrow();
  });

  it('is compared with a clock in one file only, and the retired name is nowhere', () => {
    // An `expiresAt` of the envelope compared with a time: `now >= envelope.expiresAt`, `>= Date.parse(…expiresAt)`, …
    expect(
      filesMatching(/(>=|<=|>|<)\s*[\w.?]*\.?(expiresAt|envelope_expires_at)\b|\b(expiresAt|envelope_expires_at)\.getTime\(\)\s*(>=|<=|>|<)|Date\.parse\([\w.]*envelope\.expiresAt\)/).filter(
        (file) => file.startsWith('domain/signing/') || file.startsWith('domain/envelope/'),
      ),
    ).toEqual(
      // otp.service.ts compares a one-time code's own expiry; signing.service.ts a signing session's (the token's), not the envelope's.
      ['domain/signing/otp.service.ts', 'domain/signing/signing.service.ts'],
    );
    expect(filesMatching(/now >= (envelope|settings)\.expiresAt|envelope_expires_at && now/)).toEqual([]);
    expect(filesMatching(/Signing\.Expired\b|SigningExpiredError/)).toEqual([]);
  });
});

describe('"who an agent stands for": one precedence', () => {
  const ann = { name: 'Ann', email: 'ann@example.com' };
  const bob = { name: 'Bob', email: 'bob@example.com' };
  const cases: { label: string; agent: { snapshot: unknown[] | null; info: unknown } }[] = [
    { label: 'a draft (no snapshot): its info', agent: { snapshot: null, info: ann } },
    { label: 'sent: the snapshot wins over info', agent: { snapshot: [bob], info: ann } },
    { label: 'a group: every person of the snapshot', agent: { snapshot: [ann, bob], info: null } },
    { label: 'an empty snapshot: the info', agent: { snapshot: [], info: ann } },
    { label: 'nobody', agent: { snapshot: null, info: null } },
  ];

  it('in TypeScript', () => {
    expect(cases.map(({ agent }) => peopleOf(agent))).toEqual([[ann], [bob], [ann, bob], [ann], []]);
  });

  describe('in SQL, the same', () => {
    let app: TestApp;
    beforeAll(async () => {
      app = await startTestApp();
    });
    afterAll(async () => {
      await app?.close();
    });

    it('agrees with peopleOf for every case and person index', async () => {
      for (const { label, agent } of cases) {
        for (const index of [0, 1, 2]) {
          const [row] = await app.orm.em
            .fork()
            .execute<{ person: unknown }[]>(`select ${agentPersonSqlText('a', 'a.i')} as person from (select ?::jsonb as snapshot, ?::jsonb as info, ?::int as i) a`, [
              agent.snapshot === null ? null : JSON.stringify(agent.snapshot),
              agent.info === null ? null : JSON.stringify(agent.info),
              index,
            ]);
          expect(row?.person ?? undefined, `${label}, person ${index}`).toEqual(peopleOf(agent)[index]);
        }
      }
    });
  });

  it('is written in one file', () => {
    // Reading a person from an agent's snapshot or info, in TypeScript or SQL, anywhere else is a copy.
    // send.service.ts makes the snapshot (an inline agent's is its info), it does not read one.
    expect(filesMatching(/\.snapshot\s*(\?\?|&&|->)|snapshot -> |coalesce\(\w+\.info ->> |\.info \? \[/)).toEqual(['domain/recipient/agent-people.ts', 'domain/signing/send.service.ts']);
  });
});

describe('the envelope and webhook team filters: in their gates', () => {
  it('are written in the gate files only (and the reminder sweep, which narrows to one team for the sandbox)', () => {
    expect(filesMatching(/'e\.team_id'|\be\.team_id = \?|webhook_endpoint where team_id|\bw\.team_id = \?|'w\.team_id'|\bd\.team_id = \?/)).toEqual([
      'domain/envelope/team-envelope.ts',
      'domain/signing/reminder.service.ts',
      'domain/webhook/team-webhook.ts',
    ]);
  });
});

describe("an owner's child lists: rows and order in one definition", () => {
  it('neither owner.read.ts nor the pass-through writes a child order or filter of its own', () => {
    // `order by d."order"`, `.orderBy('r.order')`, `order by a.position`, `a.revoked_at is null`: only child-lists.ts says these.
    const copies = /order by [drfav]\.("order"|created_at|position)|\.orderBy\('[drfav]\.|\.where\('a\.revoked_at'|a\.revoked_at is null|v\.field_id = f\.id|\w\.envelope_id = e\.id order/;
    expect(filesMatching(copies).filter((file) => file === 'domain/owner/owner.read.ts' || file === 'domain/envelope/envelope.answer.ts')).toEqual([]);
  });
});
