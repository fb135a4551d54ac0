import { PGlite } from '@electric-sql/pglite';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../src/shared/canonical-json.ts';

/** What the REST face wrote before splicing: the text parsed and written again. */
const rewritten = (text: string) => JSON.stringify(JSON.parse(text));

describe('canonicalJson (PostgreSQL JSON text spliced as JSON.stringify would write it)', () => {
  it('drops the spaces PostgreSQL writes in stored jsonb, and nothing inside strings', () => {
    const text = '{"envelope":{"id":"e1","name":"Lease: flat 2, floor 3","context":{"batch": "bench", "number": 12, "list": [1, 2.5, "a, b: c"], "x": {"y": null, "z": true}}}}';
    expect(canonicalJson(text)).toBe(rewritten(text));
    expect(canonicalJson(text)).toContain('"Lease: flat 2, floor 3"');
  });

  it("drops json_agg's line breaks between a list's elements", () => {
    const text = '{"documents":[{"id":"d1","pages":[{"index":0}, \n {"index":1}]}, \n {"id":"d2","context":{"a": [1, \n 2]}}]}';
    expect(canonicalJson(text)).toBe(rewritten(text));
    // Inside a string a line break is written escaped, and stays as it is.
    expect(canonicalJson('{"a":"x\\ny", "b":[1, \n 2]}')).toBe('{"a":"x\\ny","b":[1,2]}');
  });

  it("splices what PostgreSQL itself writes for the read model's shapes (lists, stored jsonb, nested rows)", async () => {
    const db = new PGlite();
    try {
      const { rows } = await db.query<{ text: string }>(`
        select json_build_object(
          'envelope', (select to_json(e) from (select 'e1' as id, '{"batch": "bench", "number": 12, "tags": ["a", "b"]}'::jsonb as context) e),
          'documents', (select json_agg(d order by d.position) from (values (0, 'Part 1', 2), (1, 'Part 2', 3)) d(position, name, page_count)),
          'fields', (select json_agg(f) from (values ('{"x": 1.5, "y": 2}'::jsonb), ('{}'::jsonb)) f(value))
        )::text as text`);
      const text = rows[0].text;
      expect(text).toContain('\n');
      // Null would mean the answer is parsed and written again on every read (the slow path).
      expect(canonicalJson(text)).not.toBeNull();
      expect(canonicalJson(text)).toBe(rewritten(text));
    } finally {
      await db.close();
    }
  });

  it('hands compact text back as it is', () => {
    const text = '{"a":[1,-2,0.5,"x"],"b":{},"c":[],"d":false,"e":"é ✓ 😀","f":"tab\\tquote\\"slash\\\\ctl\\u001f"}';
    expect(canonicalJson(text)).toBe(text);
    expect(canonicalJson(text)).toBe(rewritten(text));
  });

  it('answers null for what JavaScript would write differently, so the caller parses it', () => {
    for (const text of [
      '{"a": 1.50}', // a trailing zero (numeric in jsonb)
      '{"a": 1E+21}',
      '{"a": 1e-05}', // float8's exponent
      '{"a": 0.0000001}', // JavaScript writes 1e-7
      '{"a": 12345678901234567}', // past 2^53
      '{"a": 1234567890.123456789}', // more digits than a double keeps
      '{"a": -0}',
      '{"a": "\\u00e9"}', // an escape JavaScript does not write (a json column keeps its input)
      '{"a": "\\/"}',
      '{"b": 1, "10": 2}', // an index key: JavaScript moves it to the front
    ]) {
      expect(canonicalJson(text), text).toBeNull();
      // Each is valid JSON that JavaScript rewrites: that is why it must not be spliced.
      expect(rewritten(text)).not.toBe(text.replaceAll(': ', ':').replaceAll(', ', ','));
    }
  });

  it('agrees with parsing and writing again on generated values', () => {
    // Values as PostgreSQL writes jsonb: spaces after `:` and `,`, keys shorter first.
    let seed = 7;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const strings = ['', 'a', 'x, y: z', 'quote " and \\ back', 'line\nbreak', 'ü€😀', '{"not": "json"}', '12'];
    const numbers = ['0', '7', '-3', '42', '3.25', '-0.5', '100000', '0.001', '0.000001', '123456789012345', '1234567.25'];
    const value = (depth: number): string => {
      const pick = random();
      if (depth > 2 || pick < 0.3) return JSON.stringify(strings[Math.floor(random() * strings.length)]);
      if (pick < 0.55) return numbers[Math.floor(random() * numbers.length)];
      if (pick < 0.62) return ['true', 'false', 'null'][Math.floor(random() * 3)];
      if (pick < 0.8) return `[${Array.from({ length: Math.floor(random() * 4) }, () => value(depth + 1)).join(', ')}]`;
      const keys = ['a', 'id', 'name', 'value', 'context'].slice(0, Math.floor(random() * 5));
      return `{${keys.map((key) => `${JSON.stringify(key)}: ${value(depth + 1)}`).join(', ')}}`;
    };
    for (let count = 0; count < 500; count += 1) {
      const text = `{"payload":${value(0)},"more":[${value(1)},${value(1)}]}`;
      expect(canonicalJson(text), text).toBe(rewritten(text));
    }
  });
});
