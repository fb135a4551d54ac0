import { describe, expect, it } from 'vitest';
import { sortedKeysJson } from '../src/shared/sorted-keys-json.ts';

describe('sortedKeysJson (what the audit chain, idempotency fingerprints and data hashes are computed over)', () => {
  it('writes the same text for the same content whatever order its keys were added in, at every level', () => {
    const one = { b: 1, a: { d: [{ y: 1, x: 2 }], c: 'z' } };
    const other = { a: { c: 'z', d: [{ x: 2, y: 1 }] }, b: 1 };
    expect(sortedKeysJson(one)).toBe('{"a":{"c":"z","d":[{"x":2,"y":1}]},"b":1}');
    expect(sortedKeysJson(other)).toBe(sortedKeysJson(one));
  });

  it('orders keys by code unit, writes dates as ISO text, leaves undefined keys out and keeps array order', () => {
    expect(sortedKeysJson({ é: 1, Z: 2, a: 3, _: 4 })).toBe('{"Z":2,"_":4,"a":3,"é":1}');
    expect(sortedKeysJson({ at: new Date('2026-11-29T03:00:00Z'), gone: undefined, none: null })).toBe('{"at":"2026-11-29T03:00:00.000Z","none":null}');
    expect(sortedKeysJson([3, 1, 2])).toBe('[3,1,2]');
    expect(sortedKeysJson('text "quoted"')).toBe(JSON.stringify('text "quoted"'));
  });
});
