/**
 * The one evaluator of formulas and conditions (issue 32, src/domain/field/field-rules.js): its
 * grammar, bounds and hostile inputs, and the same cases run through the module the domain imports
 * and through the module the signing page is served, imported by Chromium from the running service.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as rules from '../src/domain/field/field-rules.js';
import { SIGNING_ASSET_PATH } from '../src/signing-page/plugin.ts';
import { launchOfflineChromium } from './helpers/browser.ts';
import { startTestApp, type TestApp } from './helpers/harness.ts';

type ExpressionCase = { expression: string; values: Record<string, number | null>; expected: number | null };
type RefusalCase = { expression: string; problem: RegExp };
type ResolveCase = {
  name: string;
  fields: { identifier: string; type: string; config: Record<string, unknown>; value: Record<string, unknown> | null; visibleWhen?: unknown }[];
  expected: Record<string, { visible: boolean; value: Record<string, unknown> | null }>;
};

/** Expressions, their inputs and results; `values` are looked up by name (null: empty). */
const EXPRESSION_CASES: ExpressionCase[] = [
  { expression: 'quantity * price * (1 + vat / 100)', values: { quantity: 3, price: 10, vat: 20 }, expected: 36 },
  { expression: '1 + 2 * 3', values: {}, expected: 7 },
  { expression: '(1 + 2) * 3', values: {}, expected: 9 },
  { expression: '10 - 4 - 3', values: {}, expected: 3 },
  { expression: '12 / 4 / 3', values: {}, expected: 1 },
  { expression: '-2 * -3', values: {}, expected: 6 },
  { expression: '- - 2', values: {}, expected: 2 },
  { expression: '.5 + 1.25', values: {}, expected: 1.75 },
  { expression: 'a / b', values: { a: 1, b: 0 }, expected: null },
  { expression: 'a + 1', values: { a: null }, expected: null },
  { expression: 'sum(a, b, c)', values: { a: 1, b: null, c: 2 }, expected: 3 },
  { expression: 'sum(a, b)', values: { a: null, b: null }, expected: null },
  { expression: 'min(4, a, 2)', values: { a: 3 }, expected: 2 },
  { expression: 'max(4, a, 2)', values: { a: 9 }, expected: 9 },
  { expression: 'abs(0 - 7)', values: {}, expected: 7 },
  { expression: 'round(1.005, 2)', values: {}, expected: 1.01 },
  { expression: 'round(-2.5)', values: {}, expected: -3 },
  { expression: 'round(2.345, 9)', values: {}, expected: null },
  { expression: 'if(a > 10, 1, 2)', values: { a: 11 }, expected: 1 },
  { expression: 'if(a > 10, 1, 2)', values: { a: 10 }, expected: 2 },
  { expression: 'if(a, 1, 2)', values: { a: null }, expected: null },
  { expression: 'if(1, 5, 1 / 0)', values: {}, expected: 5 },
  { expression: 'a == 2', values: { a: 2 }, expected: 1 },
  { expression: 'a != 2', values: { a: 2 }, expected: 0 },
  { expression: 'a <= 2', values: { a: 2 }, expected: 1 },
  { expression: 'a >= 3', values: { a: 2 }, expected: 0 },
  { expression: '[unit-price] * [line.count]', values: { 'unit-price': 2.5, 'line.count': 4 }, expected: 10 },
  { expression: '__proto__ + constructor', values: { ['__proto__']: 1, constructor: 2 }, expected: 3 },
  { expression: 'toString + hasOwnProperty', values: {}, expected: null },
  { expression: 'a * a', values: { a: 1e300 }, expected: null },
];

const nested = (depth: number) => `${'('.repeat(depth)}1${')'.repeat(depth)}`;

const REFUSAL_CASES: RefusalCase[] = [
  { expression: nested(10_000), problem: /^is longer than 1,000 characters \(got 20,001\)$/ },
  { expression: nested(65), problem: /^nests deeper than 64 levels$/ },
  { expression: `${'-'.repeat(65)}1`, problem: /^nests deeper than 64 levels$/ },
  { expression: `${'abs('.repeat(65)}1${')'.repeat(65)}`, problem: /^nests deeper than 64 levels$/ },
  { expression: '', problem: /^must not be empty$/ },
  { expression: '1 +', problem: /^ends where a number, a field or "\(" was expected$/ },
  { expression: '(1 + 2', problem: /^ends where "\)" was expected$/ },
  { expression: '1 2', problem: /where the expression should end/ },
  { expression: 'a = 2', problem: /compare with "=="/ },
  { expression: 'a < b < c', problem: /chains comparisons/ },
  { expression: 'constructor(1)', problem: /unknown function "constructor"/ },
  { expression: 'eval(1)', problem: /unknown function "eval"/ },
  { expression: 'abs(1, 2)', problem: /abs\(\) with 2 arguments; it takes 1/ },
  { expression: 'if(1, 2)', problem: /if\(\) with 2 arguments; it takes 3/ },
  { expression: 'a; b', problem: /unexpected character ";"/ },
  { expression: '[not closed', problem: /never closed/ },
  { expression: '[-bad]', problem: /not a field identifier/ },
  { expression: '"text"', problem: /unexpected character/ },
  // No exponent notation: a number is digits with an optional fraction.
  { expression: '1e3', problem: /"e3" at position 2 where the expression should end/ },
];

const RESOLVE_CASES: ResolveCase[] = [
  {
    name: 'an order form: a total over a quantity, a price and a dropdown VAT rate',
    fields: [
      { identifier: 'quantity', type: 'number', config: {}, value: { number: 3 } },
      { identifier: 'price', type: 'number', config: { decimals: 2 }, value: { number: 19.99 } },
      { identifier: 'vat', type: 'dropdown', config: {}, value: { selected: '20' } },
      { identifier: 'total', type: 'formula', config: { expression: 'quantity * price * (1 + vat / 100)', decimals: 2 }, value: null },
    ],
    expected: {
      quantity: { visible: true, value: { number: 3 } },
      price: { visible: true, value: { number: 19.99 } },
      vat: { visible: true, value: { selected: '20' } },
      total: { visible: true, value: { number: 71.96 } },
    },
  },
  {
    name: 'a company section shown only while "signing for a company" is ticked; a hidden input counts as empty',
    fields: [
      { identifier: 'company-signing', type: 'checkbox', config: {}, value: { checked: false } },
      { identifier: 'company', type: 'text', config: {}, value: { text: 'ACME' }, visibleWhen: { all: [{ field: 'company-signing', is: 'checked' }] } },
      { identifier: 'seats', type: 'number', config: {}, value: { number: 4 }, visibleWhen: { all: [{ field: 'company', is: 'filled' }] } },
      { identifier: 'fee', type: 'formula', config: { expression: 'sum([seats]) * 10' }, value: null },
    ],
    expected: {
      'company-signing': { visible: true, value: { checked: false } },
      company: { visible: false, value: null },
      seats: { visible: false, value: null },
      fee: { visible: true, value: null },
    },
  },
  {
    name: 'the same section ticked',
    fields: [
      { identifier: 'company-signing', type: 'checkbox', config: {}, value: { checked: true } },
      { identifier: 'company', type: 'text', config: {}, value: { text: 'ACME' }, visibleWhen: { all: [{ field: 'company-signing', is: 'checked' }] } },
      { identifier: 'seats', type: 'number', config: {}, value: { number: 4 }, visibleWhen: { all: [{ field: 'company', is: 'filled' }] } },
      { identifier: 'fee', type: 'formula', config: { expression: 'sum([seats]) * 10' }, value: null },
    ],
    expected: {
      'company-signing': { visible: true, value: { checked: true } },
      company: { visible: true, value: { text: 'ACME' } },
      seats: { visible: true, value: { number: 4 } },
      fee: { visible: true, value: { number: 40 } },
    },
  },
  {
    name: 'any, equal, greater and less; dates compare as dates',
    fields: [
      { identifier: 'plan', type: 'radio', config: {}, value: { selected: 'yearly' } },
      { identifier: 'amount', type: 'number', config: {}, value: { number: 500 } },
      { identifier: 'start', type: 'date', config: {}, value: { date: '2027-03-01' } },
      {
        identifier: 'discount',
        type: 'text',
        config: {},
        value: { text: 'x' },
        visibleWhen: {
          any: [
            { field: 'plan', is: 'equal', value: 'monthly' },
            { field: 'amount', is: 'greater', value: 100 },
          ],
        },
      },
      { identifier: 'small', type: 'text', config: {}, value: { text: 'y' }, visibleWhen: { all: [{ field: 'amount', is: 'less', value: 100 }] } },
      {
        identifier: 'late',
        type: 'text',
        config: {},
        value: { text: 'z' },
        visibleWhen: {
          all: [
            { field: 'start', is: 'greater', value: '2027-02-28' },
            { field: 'plan', is: 'not_equal', value: 'monthly' },
          ],
        },
      },
    ],
    expected: {
      plan: { visible: true, value: { selected: 'yearly' } },
      amount: { visible: true, value: { number: 500 } },
      start: { visible: true, value: { date: '2027-03-01' } },
      discount: { visible: true, value: { text: 'x' } },
      small: { visible: false, value: null },
      late: { visible: true, value: { text: 'z' } },
    },
  },
  {
    name: 'fields named __proto__ and constructor are fields like any other',
    fields: [
      { identifier: '__proto__', type: 'number', config: {}, value: { number: 2 } },
      { identifier: 'constructor', type: 'checkbox', config: {}, value: { checked: true } },
      {
        identifier: 'result',
        type: 'formula',
        config: { expression: '__proto__ * 10 + constructor', decimals: 0 },
        value: null,
        visibleWhen: { all: [{ field: 'constructor', is: 'checked' }] },
      },
    ],
    expected: {
      ['__proto__']: { visible: true, value: { number: 2 } },
      constructor: { visible: true, value: { checked: true } },
      result: { visible: true, value: { number: 21 } },
    },
  },
  {
    name: 'a division by zero leaves a formula empty',
    fields: [
      { identifier: 'count', type: 'number', config: {}, value: { number: 0 } },
      { identifier: 'each', type: 'formula', config: { expression: '100 / count' }, value: null },
    ],
    expected: { count: { visible: true, value: { number: 0 } }, each: { visible: true, value: null } },
  },
];

/** Runs every case through one copy of the module: the domain's, or the page's in the browser. */
function runCases(module: typeof rules, cases: { expressions: ExpressionCase[]; refusals: RefusalCase[]; resolves: ResolveCase[] }) {
  const expressionResults = cases.expressions.map(({ expression, values }) => {
    const parsed = module.parseExpression(expression);
    if (!('expression' in parsed)) return { problem: parsed.problem };
    const lookup = new Map(Object.entries(values));
    return { value: module.evaluateExpression(parsed.expression, (name) => lookup.get(name) ?? null) };
  });
  const refusalResults = cases.refusals.map(({ expression }) => {
    const parsed = module.parseExpression(expression);
    return 'problem' in parsed ? parsed.problem : null;
  });
  const resolveResults = cases.resolves.map(({ fields }) => Object.fromEntries(module.resolveFields(fields as never)));
  return { expressionResults, refusalResults, resolveResults };
}

// Cases cross into the browser as JSON: a key named __proto__ survives JSON.parse as an own key,
// but not an object literal, so the values are rebuilt with entries.
const CASES_JSON = JSON.stringify({
  expressions: EXPRESSION_CASES.map((entry) => ({ ...entry, values: Object.entries(entry.values) })),
  refusals: REFUSAL_CASES.map((entry) => ({ expression: entry.expression })),
  resolves: RESOLVE_CASES.map((entry) => ({ fields: entry.fields })),
});

function expectResults(results: ReturnType<typeof runCases>) {
  EXPRESSION_CASES.forEach((entry, index) => expect(results.expressionResults[index], entry.expression).toEqual({ value: entry.expected }));
  REFUSAL_CASES.forEach((entry, index) => expect(results.refusalResults[index], entry.expression.slice(0, 60)).toMatch(entry.problem));
  RESOLVE_CASES.forEach((entry, index) => expect(results.resolveResults[index], entry.name).toEqual(entry.expected));
}

function casesFromJson() {
  const parsed = JSON.parse(CASES_JSON) as { expressions: (Omit<ExpressionCase, 'values'> & { values: [string, number | null][] })[]; refusals: RefusalCase[]; resolves: ResolveCase[] };
  return { ...parsed, expressions: parsed.expressions.map((entry) => ({ ...entry, values: Object.fromEntries(entry.values) })) };
}

describe('the field rules, as the domain imports them', () => {
  it('evaluate every case', () => {
    expectResults(runCases(rules, casesFromJson()));
  });

  it('refuse 10,000 levels of nesting by name even past the length bound, without exhausting the stack', () => {
    // The length bound answers first; the depth bound holds on its own for input under it.
    expect(rules.parseExpression(nested(10_000))).toEqual({ problem: 'is longer than 1,000 characters (got 20,001)' });
    expect(rules.parseExpression(nested(64))).toMatchObject({ identifiers: [] });
    expect(rules.parseExpression(nested(65))).toEqual({ problem: 'nests deeper than 64 levels' });
    expect(rules.parseExpression(`${'-('.repeat(33)}1${')'.repeat(33)}`)).toEqual({ problem: 'nests deeper than 64 levels' });
    // A chain of 499 additions is a loop in the parser, not 499 levels.
    expect(rules.parseExpression(Array.from({ length: 500 }, () => '1').join('+'))).toMatchObject({ identifiers: [] });
  });

  it('list the identifiers an expression names, once each, in order', () => {
    expect(rules.parseExpression('b + a * b + [c-d] + round(e, 2)')).toMatchObject({ identifiers: ['b', 'a', 'c-d', 'e'] });
  });

  it('order fields by what they depend on, and name a cycle', () => {
    const field = (identifier: string, expression: string) => ({ identifier, type: 'formula', config: { expression }, value: null });
    const { order, cycle } = rules.orderByDependencies([field('c', 'b + 1'), field('b', 'a + 1'), { identifier: 'a', type: 'number', config: {}, value: null }]);
    expect(order.map((entry) => entry.identifier)).toEqual(['a', 'b', 'c']);
    expect(cycle).toBeNull();
    const cyclic = rules.orderByDependencies([field('x', 'y'), field('y', 'z'), field('z', 'x'), field('w', '1')]);
    expect(cyclic.order.map((entry) => entry.identifier)).toEqual(['w']);
    expect(cyclic.cycle).toEqual(['x', 'y', 'z', 'x']);
    const hidden = rules.orderByDependencies([{ identifier: 'q', type: 'text', config: {}, value: null, visibleWhen: { all: [{ field: 'q', is: 'filled' }] } }]);
    expect(hidden.cycle).toEqual(['q', 'q']);
    // 5,000 formulas in a chain: ordered by a loop, so no stack depth is involved.
    const chain = Array.from({ length: 5000 }, (_, index) => field(`f${index}`, index === 0 ? '1' : `f${index - 1} + 1`));
    const resolved = rules.resolveFields(chain.reverse());
    expect(resolved.get('f4999')).toEqual({ visible: true, value: { number: 5000 } });
  });

  it('format numbers and dates as the page shows and the PDF draws them', () => {
    expect(rules.formatNumber(1234.5, { decimals: 2, prefix: '€ ', suffix: ' net' })).toBe('€ 1,234.50 net');
    expect(rules.formatNumber(1234.5, { decimals: 2 }, 'tr-TR')).toBe('1.234,50');
    expect(rules.formatNumber(7, {})).toBe('7');
    expect(rules.formatDate('2027-03-04', 'YYYY-MM-DD')).toBe('2027-03-04');
    expect(rules.formatDate('2027-03-04', 'DD.MM.YYYY')).toBe('04.03.2027');
    expect(rules.formatDate('2027-03-04', 'MM/DD/YYYY')).toBe('03/04/2027');
    expect(rules.formatDate('2027-03-04', 'D MMMM YYYY')).toBe('4 March 2027');
    expect(rules.formatDate('2027-03-04', 'D MMMM YYYY', 'tr-TR')).toBe('4 Mart 2027');
    expect(rules.isIsoDate('2028-02-29')).toBe(true);
    expect(rules.isIsoDate('2027-02-29')).toBe(false);
    expect(rules.isIsoDate('2027-2-3')).toBe(false);
    expect(rules.decimalPlaces(1.25)).toBe(2);
    expect(rules.decimalPlaces(1e-7)).toBe(7);
    expect(rules.decimalPlaces(100)).toBe(0);
  });
});

describe('the field rules, as the signing page is served them', () => {
  let app: TestApp;
  let browser: Browser;
  beforeAll(async () => {
    app = await startTestApp();
    browser = await launchOfflineChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  it('are served as JavaScript under the page’s prefix, byte for byte the domain’s file', async () => {
    const response = await fetch(`${app.url}${SIGNING_ASSET_PATH}field-rules.js`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    const fs = await import('node:fs');
    expect(await response.text()).toBe(fs.readFileSync(new URL('../src/domain/field/field-rules.js', import.meta.url), 'utf8'));
  });

  it('evaluate every case alike in Chromium, imported from the service under the page’s policy', async () => {
    const page = await browser.newPage();
    try {
      // The page of an unknown link: the service's own origin and content security policy.
      await page.goto(`${app.url}/sign/sgn_unknown`);
      const moduleUrl = `${app.url}${SIGNING_ASSET_PATH}field-rules.js`;
      // Evaluated through the DevTools protocol, as a test's code (the page's policy allows no eval):
      // the test's own runner, so the browser runs exactly what Node ran, over the served module.
      const results = await page.evaluate(`(async () => {
        const module = await import(${JSON.stringify(moduleUrl)});
        const parsed = JSON.parse(${JSON.stringify(CASES_JSON)});
        const cases = { ...parsed, expressions: parsed.expressions.map((entry) => ({ ...entry, values: Object.fromEntries(entry.values) })) };
        const run = ${runCases.toString()};
        return JSON.stringify(run(module, cases));
      })()`);
      const fromBrowser = JSON.parse(results as string) as ReturnType<typeof runCases>;
      expectResults(fromBrowser);
      expect(fromBrowser).toEqual(JSON.parse(JSON.stringify(runCases(rules, casesFromJson()))));
    } finally {
      await page.close();
    }
  });
});
