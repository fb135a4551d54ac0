// @ts-check
/*
 * Formulas and conditions of fields (issue 32): one module, imported by the field domain on the
 * server and served as it is to the signing page (src/signing-page/plugin.ts), so that the page's
 * live results and the service's recomputation at submit are the same code. It therefore imports
 * nothing: no Node API, no package, nothing of the page. It is plain JavaScript checked through
 * JSDoc by both TypeScript programs (the page's has no Node types, so a Node dependency fails the
 * typecheck).
 *
 * The expression grammar is our own, parsed by hand: never `eval` or `Function`. Every input is
 * bounded while it is read: at most MAX_EXPRESSION_LENGTH characters, parsed by a recursive
 * descent whose depth is counted and refused past MAX_EXPRESSION_DEPTH (a binary chain such as
 * `a + b + c …` is a loop, not recursion), so no input can exhaust the stack.
 *
 * Identifiers are looked up in Maps, never as properties of plain objects: a field named
 * `__proto__` or `constructor` is a field like any other.
 */

export const MAX_EXPRESSION_LENGTH = 1000;
export const MAX_EXPRESSION_DEPTH = 64;
/** Most arguments a function call takes (min, max, sum), so a call's arguments stay bounded too. */
export const MAX_FUNCTION_ARGUMENTS = 100;
/** Most decimals `round(x, n)` and a formula's `decimals` take. */
export const MAX_DECIMALS = 6;

/** The field types a formula may name, and what they count as (`formulaInput`). */
export const FORMULA_INPUT_TYPES = Object.freeze(['number', 'formula', 'checkbox', 'dropdown']);

/**
 * @typedef {{ kind: 'number', value: number }
 *   | { kind: 'field', name: string }
 *   | { kind: 'unary', operator: '-' | '+', operand: ExpressionNode }
 *   | { kind: 'binary', operator: BinaryOperator, left: ExpressionNode, right: ExpressionNode }
 *   | { kind: 'call', name: FunctionName, args: ExpressionNode[] }} ExpressionNode
 * @typedef {'+' | '-' | '*' | '/' | '<' | '<=' | '>' | '>=' | '==' | '!='} BinaryOperator
 * @typedef {'round' | 'min' | 'max' | 'sum' | 'abs' | 'if'} FunctionName
 * @typedef {{ kind: 'number', value: number, at: number }
 *   | { kind: 'name', name: string, at: number }
 *   | { kind: 'operator', value: string, at: number }} Token
 * @typedef {{ expression: ExpressionNode, identifiers: string[] } | { problem: string }} ParsedExpression
 */

/** Arity of each function: [fewest, most] arguments. A Map, so `constructor(…)` is an unknown function. */
const FUNCTIONS = new Map(
  /** @type {[FunctionName, [number, number]][]} */ ([
    ['round', [1, 2]],
    ['min', [1, MAX_FUNCTION_ARGUMENTS]],
    ['max', [1, MAX_FUNCTION_ARGUMENTS]],
    ['sum', [1, MAX_FUNCTION_ARGUMENTS]],
    ['abs', [1, 1]],
    ['if', [3, 3]],
  ]),
);

const COMPARISONS = new Set(['<', '<=', '>', '>=', '==', '!=']);
const BARE_NAME_START = /[A-Za-z_]/;
const BARE_NAME_PART = /[A-Za-z0-9_]/;
/** A field identifier (validation.ts identifierSlug): inside brackets, since `-` and `.` would read as operators. */
const BRACKETED_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const DIGIT = /[0-9]/;

class ExpressionProblem extends Error {}

/** @param {number} count */
function formatCount(count) {
  return count.toLocaleString('en-US');
}

/**
 * Splits an expression into tokens. Names are bare (`price`, letters, digits and `_`, starting
 * with a letter or `_`) or bracketed (`[unit-price]`, any field identifier).
 * @param {string} text
 * @returns {Token[]}
 */
function tokenize(text) {
  /** @type {Token[]} */
  const tokens = [];
  let index = 0;
  while (index < text.length) {
    const character = text[index];
    if (character === ' ' || character === '\t' || character === '\n' || character === '\r') {
      index += 1;
      continue;
    }
    const at = index;
    if (DIGIT.test(character) || (character === '.' && DIGIT.test(text[index + 1] ?? ''))) {
      let end = index;
      while (end < text.length && DIGIT.test(text[end])) end += 1;
      if (text[end] === '.') {
        end += 1;
        while (end < text.length && DIGIT.test(text[end])) end += 1;
      }
      tokens.push({ kind: 'number', value: Number(text.slice(index, end)), at });
      index = end;
      continue;
    }
    if (BARE_NAME_START.test(character)) {
      let end = index + 1;
      while (end < text.length && BARE_NAME_PART.test(text[end])) end += 1;
      tokens.push({ kind: 'name', name: text.slice(index, end), at });
      index = end;
      continue;
    }
    if (character === '[') {
      const end = text.indexOf(']', index + 1);
      if (end === -1) throw new ExpressionProblem(`has a "[" at position ${at + 1} that is never closed`);
      const name = text.slice(index + 1, end).trim();
      if (!BRACKETED_NAME.test(name)) throw new ExpressionProblem(`has "[${name}]" at position ${at + 1}, which is not a field identifier`);
      tokens.push({ kind: 'name', name, at });
      index = end + 1;
      continue;
    }
    const two = text.slice(index, index + 2);
    if (two === '<=' || two === '>=' || two === '==' || two === '!=') {
      tokens.push({ kind: 'operator', value: two, at });
      index += 2;
      continue;
    }
    if ('+-*/(),<>'.includes(character)) {
      tokens.push({ kind: 'operator', value: character, at });
      index += 1;
      continue;
    }
    if (character === '=') throw new ExpressionProblem(`has "=" at position ${at + 1}; compare with "=="`);
    throw new ExpressionProblem(`has an unexpected character ${JSON.stringify(character)} at position ${at + 1}`);
  }
  return tokens;
}

/**
 * Recursive descent over the tokens, one function per precedence level:
 *   expression     := additive [ ("<" | "<=" | ">" | ">=" | "==" | "!=") additive ]
 *   additive       := multiplicative { ("+" | "-") multiplicative }
 *   multiplicative := unary { ("*" | "/") unary }
 *   unary          := ("-" | "+") unary | primary
 *   primary        := NUMBER | NAME | NAME "(" expression { "," expression } ")" | "(" expression ")"
 * Every step down through a parenthesis, a call or a sign counts one level of depth.
 */
class Parser {
  /** @param {Token[]} tokens */
  constructor(tokens) {
    this.tokens = tokens;
    this.position = 0;
    this.depth = 0;
    /** @type {Set<string>} */
    this.identifiers = new Set();
  }

  /** @returns {Token | undefined} */
  peek() {
    return this.tokens[this.position];
  }

  /** @param {string} value */
  isOperator(value) {
    const token = this.peek();
    return token !== undefined && token.kind === 'operator' && token.value === value;
  }

  /** @param {string} value */
  expect(value) {
    const token = this.peek();
    if (!this.isOperator(value)) throw new ExpressionProblem(token === undefined ? `ends where "${value}" was expected` : `has ${describe(token)} where "${value}" was expected`);
    this.position += 1;
  }

  descend() {
    this.depth += 1;
    if (this.depth > MAX_EXPRESSION_DEPTH) throw new ExpressionProblem(`nests deeper than ${MAX_EXPRESSION_DEPTH} levels`);
  }

  /** @returns {ExpressionNode} */
  parseWhole() {
    const expression = this.parseExpression();
    const rest = this.peek();
    if (rest !== undefined) throw new ExpressionProblem(`has ${describe(rest)} where the expression should end`);
    return expression;
  }

  /** @returns {ExpressionNode} */
  parseExpression() {
    const left = this.parseAdditive();
    const token = this.peek();
    if (token === undefined || token.kind !== 'operator' || !COMPARISONS.has(token.value)) return left;
    this.position += 1;
    const right = this.parseAdditive();
    const after = this.peek();
    if (after !== undefined && after.kind === 'operator' && COMPARISONS.has(after.value)) {
      throw new ExpressionProblem(`chains comparisons at position ${after.at + 1}; use parentheses or if()`);
    }
    return { kind: 'binary', operator: /** @type {BinaryOperator} */ (token.value), left, right };
  }

  /** @returns {ExpressionNode} */
  parseAdditive() {
    let left = this.parseMultiplicative();
    while (this.isOperator('+') || this.isOperator('-')) {
      const operator = /** @type {'+' | '-'} */ (/** @type {{ value: string }} */ (this.peek()).value);
      this.position += 1;
      left = { kind: 'binary', operator, left, right: this.parseMultiplicative() };
    }
    return left;
  }

  /** @returns {ExpressionNode} */
  parseMultiplicative() {
    let left = this.parseUnary();
    while (this.isOperator('*') || this.isOperator('/')) {
      const operator = /** @type {'*' | '/'} */ (/** @type {{ value: string }} */ (this.peek()).value);
      this.position += 1;
      left = { kind: 'binary', operator, left, right: this.parseUnary() };
    }
    return left;
  }

  /** @returns {ExpressionNode} */
  parseUnary() {
    if (this.isOperator('-') || this.isOperator('+')) {
      const operator = /** @type {'-' | '+'} */ (/** @type {{ value: string }} */ (this.peek()).value);
      this.position += 1;
      this.descend();
      const operand = this.parseUnary();
      this.depth -= 1;
      return { kind: 'unary', operator, operand };
    }
    return this.parsePrimary();
  }

  /** @returns {ExpressionNode} */
  parsePrimary() {
    const token = this.peek();
    if (token === undefined) throw new ExpressionProblem('ends where a number, a field or "(" was expected');
    if (token.kind === 'number') {
      this.position += 1;
      return { kind: 'number', value: token.value };
    }
    if (token.kind === 'name') {
      this.position += 1;
      if (!this.isOperator('(')) {
        this.identifiers.add(token.name);
        return { kind: 'field', name: token.name };
      }
      return this.parseCall(token);
    }
    if (token.value === '(') {
      this.position += 1;
      this.descend();
      const inner = this.parseExpression();
      this.expect(')');
      this.depth -= 1;
      return inner;
    }
    throw new ExpressionProblem(`has ${describe(token)} where a number, a field or "(" was expected`);
  }

  /**
   * @param {{ name: string, at: number }} token
   * @returns {ExpressionNode}
   */
  parseCall(token) {
    const arity = FUNCTIONS.get(/** @type {FunctionName} */ (token.name));
    if (arity === undefined) throw new ExpressionProblem(`calls an unknown function "${token.name}" at position ${token.at + 1} (known: ${[...FUNCTIONS.keys()].join(', ')})`);
    this.position += 1;
    this.descend();
    /** @type {ExpressionNode[]} */
    const args = [];
    if (!this.isOperator(')')) {
      args.push(this.parseExpression());
      while (this.isOperator(',')) {
        this.position += 1;
        if (args.length >= MAX_FUNCTION_ARGUMENTS) throw new ExpressionProblem(`passes more than ${MAX_FUNCTION_ARGUMENTS} arguments to ${token.name}()`);
        args.push(this.parseExpression());
      }
    }
    this.expect(')');
    this.depth -= 1;
    const [fewest, most] = arity;
    if (args.length < fewest || args.length > most) {
      const wanted = fewest === most ? `${fewest}` : most === MAX_FUNCTION_ARGUMENTS ? `at least ${fewest}` : `${fewest} or ${most}`;
      throw new ExpressionProblem(`calls ${token.name}() with ${args.length} argument${args.length === 1 ? '' : 's'}; it takes ${wanted}`);
    }
    return { kind: 'call', name: /** @type {FunctionName} */ (token.name), args };
  }
}

/** @param {Token} token */
function describe(token) {
  if (token.kind === 'number') return `the number ${token.value} at position ${token.at + 1}`;
  if (token.kind === 'name') return `"${token.name}" at position ${token.at + 1}`;
  return `"${token.value}" at position ${token.at + 1}`;
}

/**
 * Parses a formula's expression. Answers the syntax tree and the field identifiers it names (in
 * order of appearance), or `problem`: why it is refused, phrased to follow "the expression"
 * (`config.expression`: "nests deeper than 64 levels").
 * @param {unknown} text
 * @returns {ParsedExpression}
 */
export function parseExpression(text) {
  if (typeof text !== 'string') return { problem: 'must be a string' };
  if (text.length > MAX_EXPRESSION_LENGTH) return { problem: `is longer than ${formatCount(MAX_EXPRESSION_LENGTH)} characters (got ${formatCount(text.length)})` };
  if (text.trim() === '') return { problem: 'must not be empty' };
  try {
    const parser = new Parser(tokenize(text));
    const expression = parser.parseWhole();
    return { expression, identifiers: [...parser.identifiers] };
  } catch (error) {
    if (error instanceof ExpressionProblem) return { problem: error.message };
    throw error;
  }
}

// ---------------------------------------------------------------------------------------------
// Evaluation: numbers, or null for "empty"
// ---------------------------------------------------------------------------------------------

/**
 * A finite number, or null: an empty operand, a division by zero or an overflow leaves the
 * result empty; the service then leaves the formula's value empty (and a required formula
 * blocks completion), the page shows it empty.
 * @param {number} value
 * @returns {number | null}
 */
function finite(value) {
  return Number.isFinite(value) ? value : null;
}

/**
 * Rounds half away from zero at `decimals` decimal places of the number's decimal writing
 * (`round(1.005, 2)` is 1.01, as a person computing by hand gets, not 1.00 as binary floating
 * point multiplication would give).
 * @param {number} value
 * @param {number} decimals
 * @returns {number}
 */
export function roundDecimal(value, decimals) {
  if (!Number.isFinite(value)) return value;
  const sign = value < 0 ? -1 : 1;
  const [mantissa, exponent = '0'] = String(Math.abs(value)).split('e');
  const shifted = Math.round(Number(`${mantissa}e${Number(exponent) + decimals}`));
  const [shiftedMantissa, shiftedExponent = '0'] = String(shifted).split('e');
  const rounded = sign * Number(`${shiftedMantissa}e${Number(shiftedExponent) - decimals}`);
  // -0 reads as 0 everywhere a person sees it.
  return rounded === 0 ? 0 : rounded;
}

/**
 * Decimal places of a number as JSON writes it (`1.25` → 2, `1e-7` → 7, `100` → 0).
 * @param {number} value
 * @returns {number}
 */
export function decimalPlaces(value) {
  if (!Number.isFinite(value)) return 0;
  const [mantissa, exponent = '0'] = String(Math.abs(value)).split('e');
  const fraction = mantissa.split('.')[1] ?? '';
  return Math.max(0, fraction.length - Number(exponent));
}

/**
 * Evaluates a parsed expression. `valueOf(identifier)` gives a named field's number, or null when
 * it is empty. Empty propagates (an empty operand leaves the result empty), except in `min`,
 * `max` and `sum`, which skip empty arguments (and are empty when all are). Comparisons answer 1
 * or 0; `if(c, a, b)` takes `a` when `c` is neither 0 nor empty, `b` when it is 0, and is empty
 * when `c` is. Recursion follows the tree, whose depth the parser bounded.
 * @param {ExpressionNode} node
 * @param {(identifier: string) => number | null} valueOf
 * @returns {number | null}
 */
export function evaluateExpression(node, valueOf) {
  switch (node.kind) {
    case 'number':
      return node.value;
    case 'field': {
      const value = valueOf(node.name);
      return typeof value === 'number' && Number.isFinite(value) ? value : null;
    }
    case 'unary': {
      const operand = evaluateExpression(node.operand, valueOf);
      return operand === null ? null : node.operator === '-' ? -operand : operand;
    }
    case 'binary': {
      const left = evaluateExpression(node.left, valueOf);
      const right = evaluateExpression(node.right, valueOf);
      if (left === null || right === null) return null;
      switch (node.operator) {
        case '+':
          return finite(left + right);
        case '-':
          return finite(left - right);
        case '*':
          return finite(left * right);
        case '/':
          return right === 0 ? null : finite(left / right);
        case '<':
          return left < right ? 1 : 0;
        case '<=':
          return left <= right ? 1 : 0;
        case '>':
          return left > right ? 1 : 0;
        case '>=':
          return left >= right ? 1 : 0;
        case '==':
          return left === right ? 1 : 0;
        case '!=':
          return left !== right ? 1 : 0;
      }
      return null;
    }
    case 'call':
      return evaluateCall(node.name, node.args, valueOf);
  }
}

/**
 * @param {FunctionName} name
 * @param {ExpressionNode[]} args
 * @param {(identifier: string) => number | null} valueOf
 * @returns {number | null}
 */
function evaluateCall(name, args, valueOf) {
  if (name === 'if') {
    const condition = evaluateExpression(args[0], valueOf);
    if (condition === null) return null;
    return evaluateExpression(condition !== 0 ? args[1] : args[2], valueOf);
  }
  const values = args.map((arg) => evaluateExpression(arg, valueOf));
  switch (name) {
    case 'abs':
      return values[0] === null ? null : Math.abs(values[0]);
    case 'round': {
      const [value, decimals = 0] = values;
      if (value === null || decimals === null || !Number.isInteger(decimals) || decimals < 0 || decimals > MAX_DECIMALS) return null;
      return roundDecimal(value, decimals);
    }
    case 'min':
    case 'max':
    case 'sum': {
      const present = /** @type {number[]} */ (values.filter((value) => value !== null));
      if (present.length === 0) return null;
      // A loop, not Math.min(...present): the arguments are bounded, but the habit is cheap.
      let result = name === 'sum' ? 0 : present[0];
      for (const value of present) result = name === 'sum' ? result + value : name === 'min' ? Math.min(result, value) : Math.max(result, value);
      return finite(result);
    }
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// Fields: what a formula reads, what a condition compares
// ---------------------------------------------------------------------------------------------

/**
 * @typedef {{ field: string, is: ConditionTest, value?: string | number | boolean }} Condition
 * @typedef {'checked' | 'unchecked' | 'filled' | 'empty' | 'equal' | 'not_equal' | 'greater' | 'less'} ConditionTest
 * @typedef {{ all?: Condition[], any?: Condition[] }} VisibleWhen
 * @typedef {{ identifier: string, type: string, config: Record<string, unknown>, value: Record<string, unknown> | null, visibleWhen?: VisibleWhen | null }} RuleField
 * @typedef {{ visible: boolean, value: Record<string, unknown> | null }} ResolvedField
 */

export const CONDITION_TESTS = Object.freeze(['checked', 'unchecked', 'filled', 'empty', 'equal', 'not_equal', 'greater', 'less']);

/**
 * Which tests a condition may make of a field of each type (`filled` and `empty` of any type).
 * The values `equal` and `not_equal` compare with: `comparableValue`.
 */
const TESTS_BY_TYPE = new Map([
  ['checkbox', ['checked', 'unchecked', 'filled', 'empty', 'equal', 'not_equal']],
  ['number', ['filled', 'empty', 'equal', 'not_equal', 'greater', 'less']],
  ['formula', ['filled', 'empty', 'equal', 'not_equal', 'greater', 'less']],
  ['date', ['filled', 'empty', 'equal', 'not_equal', 'greater', 'less']],
  ['text', ['filled', 'empty', 'equal', 'not_equal']],
  ['radio', ['filled', 'empty', 'equal', 'not_equal']],
  ['dropdown', ['filled', 'empty', 'equal', 'not_equal']],
  ['binary_choice', ['filled', 'empty', 'equal', 'not_equal']],
]);

/**
 * The tests a condition may make of a field of this type.
 * @param {string} type
 * @returns {readonly string[]}
 */
export function conditionTestsFor(type) {
  return TESTS_BY_TYPE.get(type) ?? ['filled', 'empty'];
}

/**
 * The number a formula reads from a field's value: a number or formula's `number`, a checkbox's 1
 * (checked) or 0 (unchecked or not yet ticked), a dropdown's selected option value when it is a
 * decimal number (`"12.5"`), else empty.
 * @param {string} type
 * @param {Record<string, unknown> | null} value
 * @returns {number | null}
 */
export function formulaInput(type, value) {
  if (type === 'checkbox') return value !== null && value.checked === true ? 1 : 0;
  if (value === null) return null;
  if (type === 'number' || type === 'formula') return typeof value.number === 'number' && Number.isFinite(value.number) ? value.number : null;
  if (type === 'dropdown') {
    const selected = value.selected;
    return typeof selected === 'string' && /^-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)$/.test(selected.trim()) ? Number(selected.trim()) : null;
  }
  return null;
}

/**
 * What `equal` and `not_equal` compare a condition's `value` with: a text's text, a radio's or
 * dropdown's selected value, a number's or formula's number, a date's ISO date, a checkbox's
 * `checked`, a binary choice's `"accept"`/`"decline"`; null when empty.
 * @param {string} type
 * @param {Record<string, unknown> | null} value
 * @returns {unknown}
 */
export function comparableValue(type, value) {
  if (type === 'checkbox') return value !== null && value.checked === true;
  if (value === null) return null;
  switch (type) {
    case 'text':
      return value.text ?? null;
    case 'radio':
    case 'dropdown':
      return value.selected ?? null;
    case 'number':
    case 'formula':
      return value.number ?? null;
    case 'date':
      return value.date ?? null;
    case 'binary_choice':
      return value.choice ?? null;
    default:
      return null;
  }
}

/**
 * @param {Condition} condition
 * @param {string} type
 * @param {Record<string, unknown> | null} value  The named field's value, null when empty or hidden.
 * @returns {boolean}
 */
export function evaluateCondition(condition, type, value) {
  switch (condition.is) {
    case 'filled':
      return value !== null;
    case 'empty':
      return value === null;
    case 'checked':
      return value !== null && value.checked === true;
    case 'unchecked':
      return !(value !== null && value.checked === true);
    case 'equal':
      return value !== null && comparableValue(type, value) === condition.value;
    case 'not_equal':
      return value === null || comparableValue(type, value) !== condition.value;
    case 'greater':
    case 'less': {
      const left = comparableValue(type, value);
      const right = condition.value;
      if (left === null || left === undefined || right === undefined) return false;
      // Numbers compare as numbers; ISO dates (YYYY-MM-DD) as strings, which orders them by date.
      if (typeof left !== typeof right) return false;
      return condition.is === 'greater'
        ? /** @type {number | string} */ (left) > /** @type {number | string} */ (right)
        : /** @type {number | string} */ (left) < /** @type {number | string} */ (right);
    }
  }
  return false;
}

/**
 * The identifiers a field depends on: those its conditions name, and a formula's inputs.
 * @param {RuleField} field
 * @returns {string[]}
 */
export function dependenciesOf(field) {
  /** @type {Set<string>} */
  const names = new Set();
  for (const condition of [...(field.visibleWhen?.all ?? []), ...(field.visibleWhen?.any ?? [])]) names.add(condition.field);
  if (field.type === 'formula') {
    const parsed = parseExpression(field.config.expression);
    if ('identifiers' in parsed) for (const name of parsed.identifiers) names.add(name);
  }
  return [...names];
}

/**
 * Orders fields so that each comes after every field it depends on (Kahn's algorithm: a loop,
 * so a chain of thousands of fields costs no stack). Fields on a cycle are left out of `order`,
 * and `cycle` names one cycle (`a → b → a`); unknown identifiers are not dependencies here.
 * @param {RuleField[]} fields
 * @returns {{ order: RuleField[], cycle: string[] | null }}
 */
export function orderByDependencies(fields) {
  /** @type {Map<string, RuleField>} */
  const byIdentifier = new Map(fields.map((field) => [field.identifier, field]));
  /** @type {Map<string, string[]>} */
  const dependencies = new Map();
  /** @type {Map<string, string[]>} */
  const dependents = new Map();
  /** @type {Map<string, number>} */
  const waiting = new Map();
  for (const field of fields) {
    const known = dependenciesOf(field).filter((name) => byIdentifier.has(name));
    dependencies.set(field.identifier, known);
    waiting.set(field.identifier, known.length);
    for (const name of known) dependents.set(name, [...(dependents.get(name) ?? []), field.identifier]);
  }
  const ready = fields.filter((field) => waiting.get(field.identifier) === 0).map((field) => field.identifier);
  /** @type {RuleField[]} */
  const order = [];
  while (ready.length > 0) {
    const identifier = /** @type {string} */ (ready.shift());
    order.push(/** @type {RuleField} */ (byIdentifier.get(identifier)));
    for (const dependent of dependents.get(identifier) ?? []) {
      const left = /** @type {number} */ (waiting.get(dependent)) - 1;
      waiting.set(dependent, left);
      if (left === 0) ready.push(dependent);
    }
  }
  if (order.length === fields.length) return { order, cycle: null };
  // Every field left over waits on another left over: following those links must come round.
  const leftOver = new Set(fields.filter((field) => /** @type {number} */ (waiting.get(field.identifier)) > 0).map((field) => field.identifier));
  /** @type {string[]} */
  const path = [];
  /** @type {Map<string, number>} */
  const seenAt = new Map();
  let current = /** @type {string} */ (leftOver.values().next().value);
  while (!seenAt.has(current)) {
    seenAt.set(current, path.length);
    path.push(current);
    current = /** @type {string} */ ((dependencies.get(current) ?? []).find((name) => leftOver.has(name)));
  }
  const cycle = path.slice(/** @type {number} */ (seenAt.get(current)));
  return { order, cycle: [...cycle, current] };
}

/**
 * Every field's visibility and effective value, computed as the service does at submit and the
 * page does as the signer fills: in dependency order, a field is visible when its conditions hold
 * (`all` every one, `any` at least one, both when both are given) over the effective values of the
 * fields they name; a hidden field's value counts as empty; a formula's value is its expression over
 * its inputs' effective values, rounded to its `decimals`, or empty. Fields on a cycle (refused on
 * write, so only ever a stale state) are hidden and empty.
 * @param {RuleField[]} fields
 * @returns {Map<string, ResolvedField>}
 */
export function resolveFields(fields) {
  /** @type {Map<string, ResolvedField>} */
  const resolved = new Map();
  /** @type {Map<string, string>} */
  const typeOf = new Map(fields.map((field) => [field.identifier, field.type]));
  /** @param {string} identifier */
  const effectiveValue = (identifier) => resolved.get(identifier)?.value ?? null;
  const { order } = orderByDependencies(fields);
  for (const field of order) {
    const visible = isVisible(field.visibleWhen ?? null, (name) => ({ type: typeOf.get(name) ?? '', value: effectiveValue(name) }));
    /** @type {Record<string, unknown> | null} */
    let value = visible ? field.value : null;
    if (visible && field.type === 'formula') {
      const number = computeFormula(field.config, (name) => formulaInput(typeOf.get(name) ?? '', effectiveValue(name)));
      value = number === null ? null : { number };
    }
    resolved.set(field.identifier, { visible, value });
  }
  for (const field of fields) if (!resolved.has(field.identifier)) resolved.set(field.identifier, { visible: false, value: null });
  return resolved;
}

/**
 * @param {VisibleWhen | null} visibleWhen
 * @param {(identifier: string) => { type: string, value: Record<string, unknown> | null }} fieldOf
 * @returns {boolean}
 */
export function isVisible(visibleWhen, fieldOf) {
  if (visibleWhen === null) return true;
  const holds = /** @param {Condition} condition */ (condition) => {
    const named = fieldOf(condition.field);
    return evaluateCondition(condition, named.type, named.value);
  };
  const all = visibleWhen.all ?? [];
  const any = visibleWhen.any ?? [];
  return all.every(holds) && (any.length === 0 || any.some(holds));
}

/**
 * A formula's result: its expression over its inputs, rounded to its `decimals` (default 2), or
 * null (empty).
 * @param {Record<string, unknown>} config
 * @param {(identifier: string) => number | null} valueOf
 * @returns {number | null}
 */
export function computeFormula(config, valueOf) {
  const parsed = parseExpression(config.expression);
  if (!('expression' in parsed)) return null;
  const result = evaluateExpression(parsed.expression, valueOf);
  const decimals = typeof config.decimals === 'number' ? config.decimals : 2;
  return result === null ? null : roundDecimal(result, decimals);
}

// ---------------------------------------------------------------------------------------------
// How values read: the page shows and the sealed PDF draws the same text
// ---------------------------------------------------------------------------------------------

/**
 * A number as a person reads it: grouped digits and exactly `decimals` decimals in the locale's
 * way (`en-US` 1,234.50; `tr-TR` 1.234,50), between the field's `prefix` and `suffix`.
 * @param {number} number
 * @param {{ decimals?: unknown, prefix?: unknown, suffix?: unknown }} config
 * @param {string} [locale]
 * @returns {string}
 */
export function formatNumber(number, config, locale = 'en-US') {
  const decimals = typeof config.decimals === 'number' ? config.decimals : 0;
  const digits = new Intl.NumberFormat(locale, { minimumFractionDigits: decimals, maximumFractionDigits: decimals }).format(number);
  return `${typeof config.prefix === 'string' ? config.prefix : ''}${digits}${typeof config.suffix === 'string' ? config.suffix : ''}`;
}

export const DATE_FORMATS = Object.freeze(['YYYY-MM-DD', 'DD.MM.YYYY', 'MM/DD/YYYY', 'D MMMM YYYY']);

/**
 * An ISO date (`YYYY-MM-DD`) in one of DATE_FORMATS; `D MMMM YYYY` names the month in the locale
 * (`3 March 2027`, `3 Mart 2027`).
 * @param {string} isoDate
 * @param {string} format
 * @param {string} [locale]
 * @returns {string}
 */
export function formatDate(isoDate, format, locale = 'en-US') {
  const [year, month, day] = isoDate.split('-');
  switch (format) {
    case 'DD.MM.YYYY':
      return `${day}.${month}.${year}`;
    case 'MM/DD/YYYY':
      return `${month}/${day}/${year}`;
    case 'D MMMM YYYY': {
      const monthName = new Intl.DateTimeFormat(locale, { month: 'long', timeZone: 'UTC' }).format(new Date(Date.UTC(Number(year), Number(month) - 1, 1)));
      return `${Number(day)} ${monthName} ${year}`;
    }
    default:
      return isoDate;
  }
}

/**
 * Whether a string is a real calendar date written `YYYY-MM-DD` (not `2027-02-30`).
 * @param {string} text
 * @returns {boolean}
 */
export function isIsoDate(text) {
  const match = /^([0-9]{4})-([0-9]{2})-([0-9]{2})$/.exec(text);
  if (match === null) return false;
  const date = new Date(Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3])));
  return date.getUTCFullYear() === Number(match[1]) && date.getUTCMonth() === Number(match[2]) - 1 && date.getUTCDate() === Number(match[3]);
}
