/**
 * The signing page's pure logic, in Node (no browser): page-logic.js reads no `location`,
 * `document` or storage, so it imports here as it is served. What the page decides from its
 * path, its meta tags, what the tab kept and the session it read; the browser tests
 * (signing-page*.test.ts) show the same decisions on screen.
 */
import { describe, expect, it } from 'vitest';
import { resolveFields } from '../src/domain/field/field-rules.js';
import {
  embeddedSessionOf,
  fieldsInOrder,
  linkTokenOf,
  needsCode,
  nextFieldOf,
  openedSessionOf,
  pickLocaleOf,
  requiredCountOf,
  screenOf,
  sessionKeyOf,
  shownFieldsOf,
  tokenInWindowName,
  windowNameFor,
} from '../src/signing-page/page-logic.js';
import type { Field, Session } from '../src/signing-page/types.d.ts';

/** A session as the service answers it, with what a case changes. */
function session(change: { recipient?: object; envelope?: object; isExpired?: boolean; isMyTurn?: boolean; otp?: object | null; approval?: object | null } = {}): Session {
  return {
    envelope: { id: 'e', name: 'Lease', status: 'sent', ...change.envelope },
    recipient: { id: 'r', type: 'signer', activatedAt: '2026-01-01T00:00:00.000Z', completedAt: null, declinedAt: null, ...change.recipient },
    isExpired: change.isExpired ?? false,
    isMyTurn: change.isMyTurn ?? true,
    otp: change.otp ?? null,
    approval: change.approval ?? null,
    documents: [],
    fields: [],
  } as unknown as Session;
}

function field(identifier: string, extra: Partial<Field> & { at?: [string, number, number, number] }): Field {
  const [documentId, page, y, x] = extra.at ?? ['d1', 0, 0, 0];
  return {
    id: `id-${identifier}`,
    identifier,
    type: 'text',
    required: false,
    readonly: false,
    value: null,
    config: {},
    visibleWhen: null,
    views: [{ documentId, page, location: { x, y }, size: { width: 10, height: 10 } }],
    ...extra,
  } as unknown as Field;
}

describe('the signing link and a one-use signing URL', () => {
  it('reads the token from the path, escapes decoded', () => {
    expect(linkTokenOf('/sign/sgn_abc')).toBe('sgn_abc');
    expect(linkTokenOf('/sign/a%2Bb')).toBe('a+b');
    expect(linkTokenOf('/sign')).toBe('');
  });

  it('keeps a session in a frame name under its link only', () => {
    const key = sessionKeyOf('sgn_abc');
    expect(tokenInWindowName(windowNameFor(key, 'sess_1'), key)).toBe('sess_1');
    expect(tokenInWindowName(windowNameFor(sessionKeyOf('sgn_other'), 'sess_1'), key)).toBeNull();
    expect(tokenInWindowName('', key)).toBeNull();
    expect(tokenInWindowName(`${key}=`, key)).toBeNull();
  });

  it('opens an unopened URL, resumes a used one from what this tab kept, and says why the others are gone', () => {
    const nothingKept = () => null;
    expect(embeddedSessionOf(null, nothingKept)).toEqual({ token: null, gone: null, unopened: false });
    expect(embeddedSessionOf('open', () => 'sess_1')).toEqual({ token: null, gone: null, unopened: true });
    expect(embeddedSessionOf('used', () => 'sess_1')).toEqual({ token: 'sess_1', gone: null, unopened: false });
    expect(embeddedSessionOf('used', nothingKept)).toEqual({ token: null, gone: 'used', unopened: false });
    // A kept session does not revive an expired or unknown URL.
    expect(embeddedSessionOf('expired', () => 'sess_1')).toEqual({ token: null, gone: 'expired', unopened: false });
    expect(embeddedSessionOf('unknown', nothingKept)).toEqual({ token: null, gone: 'unknown', unopened: false });
    expect(embeddedSessionOf('forged', nothingKept)).toEqual({ token: null, gone: null, unopened: false });
  });

  it("reads the opening's answer: the credential, why it is gone, or nothing usable", () => {
    expect(openedSessionOf(true, { sessionToken: 'sess_1' })).toEqual({ sessionToken: 'sess_1' });
    expect(openedSessionOf(false, { link: 'used' })).toEqual({ gone: 'used' });
    expect(openedSessionOf(false, { sessionToken: 'sess_1' })).toBeNull();
    expect(openedSessionOf(true, { sessionToken: 42 })).toBeNull();
    expect(openedSessionOf(false, null)).toBeNull();
  });
});

describe('the language', () => {
  it('takes the one asked for when spoken, else the browser’s first spoken one, else en-US', () => {
    expect(pickLocaleOf('tr-TR', ['en-US'])).toBe('tr-TR');
    expect(pickLocaleOf('de-DE', ['tr'])).toBe('tr-TR');
    expect(pickLocaleOf(null, ['fr-FR', 'TR-tr', 'en-US'])).toBe('tr-TR');
    expect(pickLocaleOf(null, ['en-GB'])).toBe('en-US');
    expect(pickLocaleOf(null, ['fr-FR'])).toBe('en-US');
  });
});

describe('the screen a session calls for', () => {
  it('puts a closed envelope and a finished role before whose turn it is', () => {
    expect(screenOf(session({ recipient: { declinedAt: 'x' }, envelope: { status: 'voided' } }))).toBe('declined');
    expect(screenOf(session({ envelope: { status: 'voided' } }))).toBe('voided');
    expect(screenOf(session({ envelope: { status: 'finalized' }, recipient: { completedAt: 'x' } }))).toBe('finalized');
    expect(screenOf(session({ isExpired: true }))).toBe('expired');
    expect(screenOf(session({ approval: { approvedByMe: true }, recipient: { completedAt: 'x' } }))).toBe('approved');
    expect(screenOf(session({ recipient: { completedAt: 'x' } }))).toBe('done');
    expect(screenOf(session({ isMyTurn: false }))).toBe('not-your-turn');
    expect(screenOf(session())).toBe('signing');
    expect(screenOf(session({ recipient: { type: 'host' }, isMyTurn: false }))).toBe('host');
  });

  it('asks for the one-time code first, once the recipient is active and until it is verified', () => {
    const otp = { required: true, verified: false };
    expect(needsCode(session({ otp }))).toBe(true);
    expect(screenOf(session({ otp }))).toBe('verify');
    expect(screenOf(session({ otp, recipient: { type: 'host' } }))).toBe('verify');
    expect(screenOf(session({ otp: { required: true, verified: true } }))).toBe('signing');
    expect(screenOf(session({ otp, recipient: { activatedAt: null } }))).toBe('signing');
    // Not one's turn: waiting comes before the code.
    expect(screenOf(session({ otp, isMyTurn: false }))).toBe('not-your-turn');
  });
});

describe('the fields as the signer fills them', () => {
  const documents = [{ id: 'd1' }, { id: 'd2' }] as Session['documents'];

  it('are in reading order: document, page, top, left, by the first place each appears', () => {
    const fields = [
      field('second-doc', { at: ['d2', 0, 0, 0] }),
      field('lower', { at: ['d1', 0, 300, 0] }),
      field('right', { at: ['d1', 0, 100, 200] }),
      field('left', { at: ['d1', 0, 100, 10] }),
      field('page-two', { at: ['d1', 1, 0, 0] }),
    ];
    expect(fieldsInOrder({ documents, fields }).map((each) => each.identifier)).toEqual(['left', 'right', 'lower', 'page-two', 'second-doc']);
  });

  it('leave out what a condition hides, show formulas with their live result, and count the required ones left', () => {
    const fields = [
      field('wants_copy', { type: 'checkbox', value: { checked: false } as never }),
      field('address', { required: true, visibleWhen: { all: [{ field: 'wants_copy', is: 'checked' }] } as never, at: ['d1', 0, 10, 0] }),
      field('qty', { type: 'number', config: { decimals: 0 } as never, value: { number: 3 } as never, at: ['d1', 0, 20, 0] }),
      field('total', { type: 'formula', config: { expression: 'qty * 2' } as never, at: ['d1', 0, 30, 0] }),
      field('name', { required: true, at: ['d1', 0, 40, 0] }),
    ];
    const rules = (current: Field[]) =>
      resolveFields(current.map((each) => ({ identifier: each.identifier, type: each.type, config: each.config, value: each.value, visibleWhen: each.visibleWhen ?? null })));
    const shown = shownFieldsOf({ documents, fields }, rules(fields));
    expect(shown.map((each) => each.identifier)).toEqual(['wants_copy', 'qty', 'total', 'name']);
    expect(shown.find((each) => each.identifier === 'total')?.value).toEqual({ number: 6 });
    expect(requiredCountOf(shown)).toEqual({ done: 0, total: 1 });
    expect(nextFieldOf(shown)?.identifier).toBe('name');

    // Ticking the box shows the address, required, and it is the next to fill (reading order).
    const ticked = fields.map((each) => (each.identifier === 'wants_copy' ? ({ ...each, value: { checked: true } } as Field) : each));
    const shownNow = shownFieldsOf({ documents, fields: ticked }, rules(ticked));
    expect(shownNow.map((each) => each.identifier)).toEqual(['wants_copy', 'address', 'qty', 'total', 'name']);
    expect(requiredCountOf(shownNow)).toEqual({ done: 0, total: 2 });
    expect(nextFieldOf(shownNow)?.identifier).toBe('address');

    // Every required one filled: the next is the first empty one, then the first changeable one.
    const filled = shownNow.map((each) => (each.required ? ({ ...each, value: { text: 'x' } } as Field) : each));
    expect(requiredCountOf(filled)).toEqual({ done: 2, total: 2 });
    expect(nextFieldOf(filled)?.identifier).toBe('wants_copy');
  });
});
