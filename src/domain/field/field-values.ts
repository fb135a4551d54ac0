import { createHash } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { z } from 'zod';
import type { ValidationIssue } from '../../shared/errors.ts';
import type { FieldType } from './field.entity.ts';
import { CONDITION_TESTS, DATE_FORMATS, decimalPlaces, isIsoDate, MAX_DECIMALS, MAX_EXPRESSION_LENGTH, parseExpression } from './field-rules.js';
import { compileTextPattern } from './text-pattern.ts';

/**
 * The per-type shapes of a field's `config` (set by the sender) and `value` (pre-filled by the
 * sender or submitted by the signer), decided once here and documented in docs/fields.md.
 * Everything is plain JSON so it can live in the `jsonb` columns and be rendered into the PDF.
 */

// ---------------------------------------------------------------------------------------------
// Shapes
// ---------------------------------------------------------------------------------------------

export type TextConfig = {
  placeholder?: string;
  /** In characters (Unicode code points). */
  maxLength: number;
  multiline: boolean;
  /** RE2 syntax that is also a valid JavaScript regular expression (`u` flag); the whole text must match (text-pattern.ts). */
  pattern?: string;
};
/** A checkbox is a single box; what it means is the field's `label` or the document's text. */
export type CheckboxConfig = { [key: string]: never };
export type RadioOption = { value: string; label: string };
export type RadioConfig = { options: RadioOption[] };
export type BinaryChoiceConfig = { acceptLabel: string; declineLabel: string };
export type SimpleSignatureConfig = { allowTyped: boolean; allowDrawn: boolean };
export type BiometricSignatureConfig = { minPoints: number };
export type InitialsConfig = SimpleSignatureConfig;
export type DateFormat = 'YYYY-MM-DD' | 'DD.MM.YYYY' | 'MM/DD/YYYY' | 'D MMMM YYYY';
export type DateSignedConfig = { format: DateFormat; timeZone: string };
export type PersonConfig = { [key: string]: never };
export type DateConfig = { format: DateFormat; min?: string; max?: string };
export type NumberConfig = { min?: number; max?: number; decimals: number; prefix?: string; suffix?: string };
export type DropdownConfig = { options: RadioOption[]; placeholder?: string };
export type FormulaConfig = { expression: string; decimals: number; prefix?: string; suffix?: string };
/** The content types an attachment may be, judged from its bytes (attachment-content.ts). */
export const ATTACHMENT_CONTENT_TYPES = ['application/pdf', 'image/png', 'image/jpeg'] as const;
export type AttachmentContentType = (typeof ATTACHMENT_CONTENT_TYPES)[number];
export type AttachmentConfig = { accept: AttachmentContentType[]; maxFiles: number; maxBytes: number };

export type TextValue = { text: string };
export type CheckboxValue = { checked: boolean };
export type RadioValue = { selected: string };
export type BinaryChoiceValue = { choice: 'accept' | 'decline' };
export type DrawnSignatureValue = { kind: 'drawn'; image: string };
export type TypedSignatureValue = { kind: 'typed'; text: string; font: SignatureFont };
export type SimpleSignatureValue = DrawnSignatureValue | TypedSignatureValue;
export type SignatureFont = 'cursive' | 'serif';
/** One pen sample: position, time in ms (any fixed origin), pressure 0..1. */
/** `pointerType`: what Pointer Events reported for the sample (mouse, pen, touch), when the capture kept it. */
export type BiometricPoint = { x: number; y: number; t: number; p: number; pointerType?: 'mouse' | 'pen' | 'touch' };
export type BiometricSignatureValue = { image: string; strokes: BiometricPoint[][] };
export type DateValue = { date: string };
export type TextOfPersonValue = { text: string };
export type NumberValue = { number: number };
/** One uploaded file as a value names it: the record `uploadSigningAttachment` answered. */
export type AttachmentFile = { id: string; name: string; contentType: AttachmentContentType; size: number; sha256: string };
export type AttachmentValue = { files: AttachmentFile[] };

export type FieldConfigByType = {
  text: TextConfig;
  checkbox: CheckboxConfig;
  radio: RadioConfig;
  binary_choice: BinaryChoiceConfig;
  simple_signature: SimpleSignatureConfig;
  biometric_signature: BiometricSignatureConfig;
  initials: InitialsConfig;
  date_signed: DateSignedConfig;
  full_name: PersonConfig;
  email: PersonConfig;
  date: DateConfig;
  number: NumberConfig;
  dropdown: DropdownConfig;
  formula: FormulaConfig;
  attachment: AttachmentConfig;
};
export type FieldValueByType = {
  text: TextValue;
  checkbox: CheckboxValue;
  radio: RadioValue;
  binary_choice: BinaryChoiceValue;
  simple_signature: SimpleSignatureValue;
  biometric_signature: BiometricSignatureValue;
  initials: SimpleSignatureValue;
  /** The four below are never sent: the service fills them (date_signed, full_name, email) or computes them (formula). */
  date_signed: DateValue;
  full_name: TextOfPersonValue;
  email: TextOfPersonValue;
  date: DateValue;
  number: NumberValue;
  dropdown: RadioValue;
  formula: NumberValue;
  /** Sent by the signer naming uploaded files by id; the service fills in each file's record. */
  attachment: AttachmentValue;
};
export type FieldConfig = FieldConfigByType[FieldType];
export type FieldValue = FieldValueByType[FieldType];

export type BiometricSummary = {
  strokeCount: number;
  pointCount: number;
  durationMs: number;
  pressureCaptured: boolean;
  strokesSha256: string;
};

/** Every limit in one place, so docs, renderers and tests can quote the same numbers. */
export const fieldLimits = {
  textPlaceholderMaxLength: 200,
  textMaxLengthMin: 1,
  textMaxLengthMax: 10_000,
  textMaxLengthDefault: 1000,
  textPatternMaxLength: 500,
  radioOptionsMin: 2,
  radioOptionsMax: 50,
  radioOptionValueMaxLength: 100,
  radioOptionLabelMaxLength: 200,
  binaryChoiceLabelMaxLength: 100,
  typedSignatureMaxLength: 100,
  imageMaxBytes: 1024 * 1024,
  imageMaxSide: 4096,
  imageMaxPixels: 4096 * 1024,
  biometricMaxPoints: 50_000,
  typedInitialsMaxLength: 8,
  dropdownOptionsMin: 2,
  dropdownOptionsMax: 200,
  numberAffixMaxLength: 20,
  numberDecimalsMax: MAX_DECIMALS,
  formulaDecimalsDefault: 2,
  expressionMaxLength: MAX_EXPRESSION_LENGTH,
  timeZoneMaxLength: 64,
  conditionsMax: 20,
  attachmentMaxFilesMax: 10,
  attachmentMaxBytesDefault: 10 * 1024 * 1024,
  attachmentMaxBytesMax: 25 * 1024 * 1024,
  attachmentNameMaxLength: 200,
  /** An attachment image's bounds, read from its header before anything decodes it (a 12 MP phone photo fits). */
  attachmentImageMaxSide: 10_000,
  attachmentImageMaxPixels: 40_000_000,
  conditionValueMaxLength: 1000,
  /** A response listing thousands of bad pen samples helps nobody; the rest are counted. */
  maxIssuesListed: 50,
} as const;

// ---------------------------------------------------------------------------------------------
// Strings
// ---------------------------------------------------------------------------------------------

type StringRules = {
  min: number;
  max: number;
  /** Must contain something other than white space (labels, typed names). */
  notBlank?: boolean;
  /** Text values may carry tabs, and line breaks when multiline; nothing else does. */
  allowTabs?: boolean;
  allowLineBreaks?: boolean;
  /** Message for a line break where none is allowed. */
  lineBreakMessage?: string;
};

// PostgreSQL's jsonb refuses U+0000 and unpaired surrogates; refusing them here turns what would
// be a Server.Internal at insert time into a named issue.
const unpairedSurrogate = /\p{Cs}/u;
const lineBreak = /[\n\r\u2028\u2029]/;
const tab = /\t/;
const otherControl = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F]/;

/** Length in characters a person would count (code points), not UTF-16 units. */
function characterCount(text: string): number {
  let count = 0;
  for (const _character of text) count += 1;
  return count;
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}

function stringProblem(text: string, rules: StringRules): string | undefined {
  if (unpairedSurrogate.test(text)) return 'must be valid Unicode text (it contains an unpaired surrogate)';
  if (lineBreak.test(text) && !rules.allowLineBreaks) return rules.lineBreakMessage ?? 'must be a single line (no line breaks)';
  if (otherControl.test(text) || (tab.test(text) && !rules.allowTabs)) return 'must not contain control characters';
  const length = characterCount(text);
  if (length < rules.min) return rules.min === 1 ? 'must not be empty' : `must be at least ${plural(rules.min, 'character')}`;
  if (length > rules.max) return `must be at most ${plural(rules.max, 'character')}`;
  if (rules.notBlank && text.trim() === '') return 'must not be blank';
  return undefined;
}

/** A string schema with character-based limits; `extra` runs only when the basics hold. */
function boundedString(rules: StringRules, extra?: (text: string) => string | undefined) {
  return z.string().superRefine((text, ctx) => {
    const problem = stringProblem(text, rules) ?? extra?.(text);
    if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
  });
}

function label(max: number) {
  return boundedString({ min: 1, max, notBlank: true });
}

// ---------------------------------------------------------------------------------------------
// PNG data URLs
// ---------------------------------------------------------------------------------------------

const pngDataUrlPrefix = 'data:image/png;base64,';
const pngSignature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const base64Alphabet = /^[A-Za-z0-9+/]*={0,2}$/;

function decodedBase64Length(base64: string): number {
  const padding = base64.endsWith('==') ? 2 : base64.endsWith('=') ? 1 : 0;
  return (base64.length / 4) * 3 - padding;
}

/**
 * Walks the PNG's chunks (lengths, CRCs, IHDR first, an IDAT, IEND last) without inflating the
 * pixels. Cheap, and it catches truncated or corrupted uploads now rather than when the signed
 * PDF is rendered, after the signer has gone. The size limits keep a small, highly compressed
 * file from decoding into hundreds of megabytes at render time.
 */
function pngStructureProblem(bytes: Buffer): string | undefined {
  if (bytes.length < pngSignature.length || !bytes.subarray(0, pngSignature.length).equals(pngSignature)) {
    return 'must be a PNG image (the data does not start with the PNG signature)';
  }
  let offset = pngSignature.length;
  let index = 0;
  let sawImageData = false;
  while (offset < bytes.length) {
    if (offset + 12 > bytes.length) return 'is not a well-formed PNG (truncated chunk)';
    const length = bytes.readUInt32BE(offset);
    const type = bytes.toString('latin1', offset + 4, offset + 8);
    const end = offset + 12 + length;
    if (!/^[A-Za-z]{4}$/.test(type) || end > bytes.length) return 'is not a well-formed PNG (truncated or corrupted chunk)';
    const crc = bytes.readUInt32BE(end - 4);
    if (crc32(bytes.subarray(offset + 4, end - 4)) !== crc) return `is not a well-formed PNG (bad checksum in chunk ${type})`;
    if (index === 0) {
      if (type !== 'IHDR' || length !== 13) return 'is not a well-formed PNG (the first chunk must be IHDR)';
      const width = bytes.readUInt32BE(offset + 8);
      const height = bytes.readUInt32BE(offset + 12);
      if (width < 1 || height < 1) return 'is not a well-formed PNG (zero width or height)';
      if (width > fieldLimits.imageMaxSide || height > fieldLimits.imageMaxSide || width * height > fieldLimits.imageMaxPixels) {
        return `must be at most ${fieldLimits.imageMaxSide} pixels wide and high and ${fieldLimits.imageMaxPixels} pixels in total (got ${width} × ${height})`;
      }
    }
    if (type === 'IDAT') sawImageData = true;
    if (type === 'IEND') {
      if (end !== bytes.length) return 'is not a well-formed PNG (data after IEND)';
      return sawImageData ? undefined : 'is not a well-formed PNG (no image data)';
    }
    offset = end;
    index += 1;
  }
  return 'is not a well-formed PNG (missing IEND; truncated?)';
}

function pngDataUrlProblem(url: string): string | undefined {
  if (!url.startsWith(pngDataUrlPrefix)) return `must be a PNG data URL starting with "${pngDataUrlPrefix}"`;
  const base64 = url.slice(pngDataUrlPrefix.length);
  if (base64.length === 0 || base64.length % 4 !== 0 || !base64Alphabet.test(base64)) {
    return 'must carry valid base64 after "base64," (A–Z, a–z, 0–9, +, /, padded with =, no white space)';
  }
  // Measured before decoding, so an oversized image costs no allocation.
  const size = decodedBase64Length(base64);
  if (size > fieldLimits.imageMaxBytes) return `must be at most ${fieldLimits.imageMaxBytes} bytes once decoded (got ${size})`;
  return pngStructureProblem(Buffer.from(base64, 'base64'));
}

const pngDataUrl = z.string().superRefine((url, ctx) => {
  const problem = pngDataUrlProblem(url);
  if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
});

// ---------------------------------------------------------------------------------------------
// Config schemas
// ---------------------------------------------------------------------------------------------

const textConfigSchema = z
  .strictObject({
    placeholder: boundedString({ min: 0, max: fieldLimits.textPlaceholderMaxLength }).optional(),
    maxLength: z.int().min(fieldLimits.textMaxLengthMin).max(fieldLimits.textMaxLengthMax).default(fieldLimits.textMaxLengthDefault),
    multiline: z.boolean().default(false),
    pattern: boundedString({ min: 1, max: fieldLimits.textPatternMaxLength }).optional(),
  })
  .superRefine((config, ctx) => {
    // Checked on the whole config because the cost bound depends on maxLength. Zod runs this even
    // when other keys failed, so nothing here trusts the shape: a pattern whose string rules
    // failed is already reported, and an invalid maxLength leaves only the syntax to check.
    const { pattern, maxLength } = config as { pattern?: unknown; maxLength?: unknown };
    if (typeof pattern !== 'string' || stringProblem(pattern, { min: 1, max: fieldLimits.textPatternMaxLength }) !== undefined) return;
    const validMaxLength = Number.isInteger(maxLength) && (maxLength as number) >= fieldLimits.textMaxLengthMin && (maxLength as number) <= fieldLimits.textMaxLengthMax;
    const compiled = compileTextPattern(pattern, validMaxLength ? (maxLength as number) : fieldLimits.textMaxLengthMin);
    if ('problem' in compiled) ctx.addIssue({ code: 'custom', path: ['pattern'], message: compiled.problem });
  });

const checkboxConfigSchema = z.strictObject(
  {},
  {
    error: (issue) => (issue.code === 'unrecognized_keys' ? 'unknown key; checkbox fields take no configuration (send {})' : undefined),
  },
);

const radioOptionSchema = z.strictObject({
  value: boundedString({ min: 1, max: fieldLimits.radioOptionValueMaxLength, notBlank: true }),
  label: label(fieldLimits.radioOptionLabelMaxLength),
});

const radioConfigSchema = z.strictObject({
  options: z.array(radioOptionSchema).min(fieldLimits.radioOptionsMin).max(fieldLimits.radioOptionsMax).superRefine(addDuplicateOptionIssues),
});

/** The value is what the signer submits and the PDF records, so it must identify one option. */
function addDuplicateOptionIssues(options: RadioOption[], ctx: z.core.$RefinementCtx<RadioOption[]>) {
  const firstIndexByValue = new Map<string, number>();
  options.forEach((option, index) => {
    const first = firstIndexByValue.get(option.value);
    if (first === undefined) firstIndexByValue.set(option.value, index);
    else ctx.addIssue({ code: 'custom', path: [index, 'value'], message: `must be unique; options[${first}] already has the value ${JSON.stringify(option.value)}` });
  });
}

function sameLabel(a: string, b: string): boolean {
  return a.trim().toLocaleLowerCase('en') === b.trim().toLocaleLowerCase('en');
}

const binaryChoiceConfigSchema = z
  .strictObject({
    acceptLabel: label(fieldLimits.binaryChoiceLabelMaxLength).default('Accept'),
    declineLabel: label(fieldLimits.binaryChoiceLabelMaxLength).default('Decline'),
  })
  .superRefine((config, ctx) => {
    // Two buttons reading the same would make the signer's answer meaningless.
    if (sameLabel(config.acceptLabel, config.declineLabel)) {
      ctx.addIssue({ code: 'custom', path: ['declineLabel'], message: 'must differ from acceptLabel' });
    }
  });

const simpleSignatureConfigSchema = z
  .strictObject({
    allowTyped: z.boolean().default(true),
    allowDrawn: z.boolean().default(true),
  })
  .superRefine((config, ctx) => {
    if (!config.allowTyped && !config.allowDrawn) {
      ctx.addIssue({ code: 'custom', message: 'allowTyped and allowDrawn cannot both be false: the signer would have no way to sign' });
    }
  });

const biometricSignatureConfigSchema = z.strictObject({
  minPoints: z.int().min(1).max(fieldLimits.biometricMaxPoints).default(1),
});

const dateFormat = z.enum(DATE_FORMATS as unknown as [DateFormat, ...DateFormat[]]);

/** An IANA time zone the runtime knows (`Europe/Istanbul`, `UTC`). */
const timeZone = boundedString({ min: 1, max: fieldLimits.timeZoneMaxLength }, (zone) => {
  if (!/^[A-Za-z][A-Za-z0-9_+\-/]*$/.test(zone)) return 'must be an IANA time zone name such as "Europe/Istanbul" or "UTC"';
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return undefined;
  } catch {
    return 'must be an IANA time zone name such as "Europe/Istanbul" or "UTC" (this one is unknown)';
  }
});

const isoDate = z.string().superRefine((text, ctx) => {
  if (!isIsoDate(text)) ctx.addIssue({ code: 'custom', message: 'must be a calendar date written YYYY-MM-DD' });
});

const affix = boundedString({ min: 1, max: fieldLimits.numberAffixMaxLength });

function personConfigSchema(type: 'full_name' | 'email') {
  return z.strictObject({}, { error: (issue) => (issue.code === 'unrecognized_keys' ? `unknown key; ${type} fields take no configuration (send {})` : undefined) });
}

/** `min` ≤ `max` when both are given (numbers or ISO dates, which order as strings). */
function addRangeIssue(config: { min?: unknown; max?: unknown }, ctx: z.core.$RefinementCtx<unknown>) {
  const { min, max } = config;
  // Only two valid bounds compare; an invalid one is reported on its own.
  const valid = (bound: unknown) => (typeof bound === 'number' && Number.isFinite(bound)) || (typeof bound === 'string' && isIsoDate(bound));
  if (!valid(min) || !valid(max) || typeof min !== typeof max) return;
  if ((min as number | string) > (max as number | string)) ctx.addIssue({ code: 'custom', path: ['max'], message: `must not be less than min (${String(min)})` });
}

const dateSignedConfigSchema = z.strictObject({ format: dateFormat.default('YYYY-MM-DD'), timeZone: timeZone.default('UTC') });

const dateConfigSchema = z.strictObject({ format: dateFormat.default('YYYY-MM-DD'), min: isoDate.optional(), max: isoDate.optional() }).superRefine(addRangeIssue);

const numberConfigSchema = z
  .strictObject({
    min: z.number().optional(),
    max: z.number().optional(),
    decimals: z.int().min(0).max(fieldLimits.numberDecimalsMax).default(0),
    prefix: affix.optional(),
    suffix: affix.optional(),
  })
  .superRefine(addRangeIssue);

const dropdownConfigSchema = z.strictObject({
  options: z.array(radioOptionSchema).min(fieldLimits.dropdownOptionsMin).max(fieldLimits.dropdownOptionsMax).superRefine(addDuplicateOptionIssues),
  placeholder: boundedString({ min: 0, max: fieldLimits.textPlaceholderMaxLength }).optional(),
});

const formulaConfigSchema = z.strictObject({
  // The syntax and bounds are field-rules.js's; what the names refer to is checked against the
  // owner's other fields (field.service.ts), since they may arrive in the same request.
  expression: z.string().superRefine((expression, ctx) => {
    const parsed = parseExpression(expression);
    if ('problem' in parsed) ctx.addIssue({ code: 'custom', message: parsed.problem });
  }),
  decimals: z.int().min(0).max(fieldLimits.numberDecimalsMax).default(fieldLimits.formulaDecimalsDefault),
  prefix: affix.optional(),
  suffix: affix.optional(),
});

const attachmentConfigSchema = z.strictObject({
  accept: z
    .array(z.enum(ATTACHMENT_CONTENT_TYPES))
    .min(1)
    .superRefine((types, ctx) => {
      types.forEach((type, index) => {
        if (types.indexOf(type) !== index) ctx.addIssue({ code: 'custom', path: [index], message: `must be unique; ${JSON.stringify(type)} is listed twice` });
      });
    })
    .default([...ATTACHMENT_CONTENT_TYPES]),
  maxFiles: z.int().min(1).max(fieldLimits.attachmentMaxFilesMax).default(1),
  maxBytes: z.int().min(1).max(fieldLimits.attachmentMaxBytesMax).default(fieldLimits.attachmentMaxBytesDefault),
});

const configSchemas: { [T in FieldType]: z.ZodType<FieldConfigByType[T]> } = {
  text: textConfigSchema,
  checkbox: checkboxConfigSchema as z.ZodType<CheckboxConfig>,
  radio: radioConfigSchema,
  binary_choice: binaryChoiceConfigSchema,
  simple_signature: simpleSignatureConfigSchema,
  biometric_signature: biometricSignatureConfigSchema,
  initials: simpleSignatureConfigSchema,
  date_signed: dateSignedConfigSchema,
  full_name: personConfigSchema('full_name') as z.ZodType<PersonConfig>,
  email: personConfigSchema('email') as z.ZodType<PersonConfig>,
  date: dateConfigSchema,
  number: numberConfigSchema,
  dropdown: dropdownConfigSchema,
  formula: formulaConfigSchema,
  attachment: attachmentConfigSchema,
};

// ---------------------------------------------------------------------------------------------
// Value schemas (built from the parsed config, since most rules come from it)
// ---------------------------------------------------------------------------------------------

function textValueSchema(config: TextConfig) {
  const pattern = config.pattern === undefined ? undefined : compileTextPattern(config.pattern, config.maxLength);
  const rules: StringRules = {
    min: 1,
    max: config.maxLength,
    allowTabs: true,
    allowLineBreaks: config.multiline,
    lineBreakMessage: 'must be a single line: this field is not multiline',
  };
  return z.strictObject({
    text: boundedString(rules, (text) => {
      if (pattern === undefined) return undefined;
      // Only a field stored before patterns had to be RE2 gets here with a refused pattern.
      if ('problem' in pattern) return `cannot be checked: the field's pattern is no longer accepted (it ${pattern.problem}); the sender must change the pattern`;
      return pattern.matcher.matches(text) ? undefined : `must match the field's pattern /${config.pattern}/`;
    }),
  });
}

function checkboxValueSchema() {
  return z.strictObject({ checked: z.boolean() });
}

function radioValueSchema(config: RadioConfig) {
  const values = config.options.map((option) => option.value);
  return z.strictObject({
    selected: z.string().superRefine((selected, ctx) => {
      if (!values.includes(selected)) {
        ctx.addIssue({ code: 'custom', message: `must be one of the field's option values: ${values.map((value) => JSON.stringify(value)).join(', ')}` });
      }
    }),
  });
}

function binaryChoiceValueSchema() {
  return z.strictObject({ choice: z.enum(['accept', 'decline']) });
}

const signatureKinds = ['drawn', 'typed'] as const;

function simpleSignatureValueSchema(config: SimpleSignatureConfig, typedMaxLength: number = fieldLimits.typedSignatureMaxLength) {
  const drawn = z.strictObject({ kind: z.literal('drawn'), image: pngDataUrl });
  const typed = z.strictObject({
    kind: z.literal('typed'),
    text: label(typedMaxLength),
    font: z.enum(['cursive', 'serif']).default('cursive'),
  });
  // Only the allowed kinds are options, so a refused kind is reported before its shape is.
  const allowed = [...(config.allowDrawn ? [drawn] : []), ...(config.allowTyped ? [typed] : [])] as [typeof drawn | typeof typed];
  return z.discriminatedUnion('kind', allowed, { error: (issue) => signatureKindMessage(issue, config) });
}

function signatureKindMessage(issue: z.core.$ZodRawIssue, config: SimpleSignatureConfig): string | undefined {
  if (issue.code !== 'invalid_union') return undefined;
  const kind = isPlainObject(issue.input) ? issue.input.kind : undefined;
  if (kind === undefined) return 'is required';
  if (kind === 'typed' && !config.allowTyped) return 'typed signatures are not allowed for this field (config.allowTyped is false)';
  if (kind === 'drawn' && !config.allowDrawn) return 'drawn signatures are not allowed for this field (config.allowDrawn is false)';
  return `must be one of ${signatureKinds.map((name) => JSON.stringify(name)).join(', ')}`;
}

const biometricPointSchema = z.strictObject({
  x: z.number(),
  y: z.number(),
  t: z.number().min(0),
  p: z.number().min(0).max(1),
  pointerType: z.enum(['mouse', 'pen', 'touch']).optional(),
});

function biometricSignatureValueSchema(config: BiometricSignatureConfig) {
  const strokes = z
    .array(z.array(biometricPointSchema).min(1, 'must have at least one point'))
    .min(1, 'must have at least one stroke')
    .superRefine((strokes, ctx) => {
      // Zod runs this even after some non-fatal point issues, so the sums stay defensive.
      const pointCount = strokes.reduce((sum, stroke) => sum + (Array.isArray(stroke) ? stroke.length : 0), 0);
      if (pointCount > fieldLimits.biometricMaxPoints) {
        ctx.addIssue({ code: 'custom', message: `must have at most ${fieldLimits.biometricMaxPoints} points in total (got ${pointCount})` });
      }
      // An empty stroke list or stroke is already reported; a minPoints issue would repeat it.
      const shapeHolds = strokes.length > 0 && strokes.every((stroke) => Array.isArray(stroke) && stroke.length > 0);
      if (shapeHolds && pointCount < config.minPoints) {
        ctx.addIssue({ code: 'custom', message: `must have at least ${plural(config.minPoints, 'point')} in total (the field's minPoints; got ${pointCount})` });
      }
      addTimeOrderIssues(strokes, ctx);
    });
  return z.strictObject({ image: pngDataUrl, strokes });
}

/**
 * Time runs forward: within a stroke, and from one stroke to the next (a pen draws one stroke
 * at a time). Stroke order and speed are the evidence, so samples out of order are refused.
 */
function addTimeOrderIssues(strokes: BiometricPoint[][], ctx: z.core.$RefinementCtx<BiometricPoint[][]>): void {
  let previousT: number | undefined;
  strokes.forEach((stroke, strokeIndex) => {
    if (!Array.isArray(stroke)) return;
    stroke.forEach((point, pointIndex) => {
      if (typeof point?.t !== 'number') return;
      if (previousT !== undefined && point.t < previousT) {
        const message =
          pointIndex === 0 ? `must not be earlier than the last point of the previous stroke (t = ${previousT})` : `must not be earlier than the previous point (t = ${previousT})`;
        ctx.addIssue({ code: 'custom', path: [strokeIndex, pointIndex, 't'], message });
      }
      previousT = previousT === undefined ? point.t : Math.max(previousT, point.t);
    });
  });
}

/**
 * A value nobody sends: the service fills it when the recipient completes, or computes it. Any
 * value given is refused at the value's own path, saying so; `null` (no value) is accepted.
 */
function notSentValueSchema(reason: string) {
  return z.unknown().superRefine((_value, ctx) => ctx.addIssue({ code: 'custom', message: reason }));
}

function dateValueSchema(config: DateConfig) {
  return z.strictObject({
    date: isoDate.superRefine((date, ctx) => {
      if (!isIsoDate(date)) return;
      if (config.min !== undefined && date < config.min) ctx.addIssue({ code: 'custom', message: `must be on or after ${config.min} (the field's min)` });
      if (config.max !== undefined && date > config.max) ctx.addIssue({ code: 'custom', message: `must be on or before ${config.max} (the field's max)` });
    }),
  });
}

function numberValueSchema(config: NumberConfig) {
  return z.strictObject({
    number: z.number().superRefine((number, ctx) => {
      const places = decimalPlaces(number);
      if (places > config.decimals) {
        ctx.addIssue({
          code: 'custom',
          message:
            config.decimals === 0 ? 'must be a whole number (the field has no decimals)' : `must have at most ${plural(config.decimals, 'decimal')} (the field's decimals; got ${places})`,
        });
      }
      if (config.min !== undefined && number < config.min) ctx.addIssue({ code: 'custom', message: `must be at least ${config.min} (the field's min)` });
      if (config.max !== undefined && number > config.max) ctx.addIssue({ code: 'custom', message: `must be at most ${config.max} (the field's max)` });
    }),
  });
}

/**
 * What a signer sends for an attachment: the ids of files it uploaded for the field, 1 to
 * `maxFiles` of them. Only the ids count: the service answers each file's record from its own
 * row (signing/attachment.service.ts), so a name or hash sent along is checked nowhere and dropped.
 */
function attachmentValueSchema(config: AttachmentConfig) {
  const file = z.looseObject({ id: z.uuid('must be the id of a file uploaded with uploadSigningAttachment') }).transform(({ id }) => ({ id: id.toLowerCase() }));
  return z.strictObject({
    files: z
      .array(file)
      .min(1, 'must name at least one file (send null for no value)')
      .max(config.maxFiles, `must name at most ${config.maxFiles} file${config.maxFiles === 1 ? '' : 's'} (the field's maxFiles)`)
      .superRefine((files, ctx) => {
        files.forEach((entry, index) => {
          if (files.findIndex((other) => other.id === entry.id) !== index) ctx.addIssue({ code: 'custom', path: [index, 'id'], message: 'names the same file twice' });
        });
      }),
  }) as unknown as z.ZodType<AttachmentValue>;
}

/** The types whose value the service fills when the recipient completes (docs/fields.md). */
export const SERVICE_FILLED_TYPES: readonly FieldType[] = ['date_signed', 'full_name', 'email'];
/** The types whose value nobody sends: filled by the service, or computed (formula). */
export const NOT_SENT_TYPES: readonly FieldType[] = [...SERVICE_FILLED_TYPES, 'formula'];

type ValueSchemaBuilders = { [T in FieldType]: (config: FieldConfigByType[T]) => z.ZodType<FieldValueByType[T]> };

const valueSchemaBuilders: ValueSchemaBuilders = {
  text: textValueSchema,
  checkbox: checkboxValueSchema,
  radio: radioValueSchema,
  binary_choice: binaryChoiceValueSchema,
  simple_signature: simpleSignatureValueSchema,
  biometric_signature: biometricSignatureValueSchema,
  initials: (config) => simpleSignatureValueSchema(config, fieldLimits.typedInitialsMaxLength),
  date_signed: () => notSentValueSchema('is filled by the service with the date the recipient completes; send no value') as z.ZodType<DateValue>,
  full_name: () => notSentValueSchema('is filled by the service with the name of the person who completes the role; send no value') as z.ZodType<TextOfPersonValue>,
  email: () => notSentValueSchema('is filled by the service with the email address of the person who completes the role; send no value') as z.ZodType<TextOfPersonValue>,
  date: dateValueSchema,
  number: numberValueSchema,
  dropdown: radioValueSchema,
  formula: () => notSentValueSchema("is computed from the field's expression; send no value") as z.ZodType<NumberValue>,
  attachment: attachmentValueSchema,
};

// ---------------------------------------------------------------------------------------------
// Messages and paths
// ---------------------------------------------------------------------------------------------

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describeInput(input: unknown): string {
  if (input === null) return 'null';
  if (Array.isArray(input)) return 'an array';
  if (typeof input === 'number' && !Number.isFinite(input)) return String(input);
  const kind = typeof input;
  return kind === 'object' ? 'an object' : `a ${kind}`;
}

const expectedNames: Record<string, string> = {
  string: 'a string',
  number: 'a finite number',
  int: 'an integer',
  boolean: 'true or false',
  object: 'an object',
  array: 'an array',
};

function allowedKeys(schema: unknown): string[] {
  const shape = (schema as { _zod?: { def?: { shape?: Record<string, unknown> } } } | undefined)?._zod?.def?.shape;
  return shape === undefined ? [] : Object.keys(shape);
}

/** One voice for every message; schemas only declare limits (and the few special rules). */
function messageFor(issue: z.core.$ZodRawIssue): string | undefined {
  switch (issue.code) {
    case 'invalid_type': {
      if (issue.input === undefined) return 'is required';
      if (issue.expected === 'int' && typeof issue.input === 'number' && Number.isFinite(issue.input)) return 'must be an integer';
      return `must be ${expectedNames[issue.expected] ?? issue.expected}, not ${describeInput(issue.input)}`;
    }
    case 'too_small':
      return issue.origin === 'array' ? `must have at least ${plural(Number(issue.minimum), 'item')}` : `must be at least ${issue.minimum}`;
    case 'too_big':
      return issue.origin === 'array' ? `must have at most ${plural(Number(issue.maximum), 'item')}` : `must be at most ${issue.maximum}`;
    case 'unrecognized_keys': {
      const keys = allowedKeys(issue.inst);
      return keys.length === 0 ? 'unknown key; no keys are allowed here' : `unknown key; allowed keys are ${keys.join(', ')}`;
    }
    case 'invalid_value':
      return `must be one of ${issue.values.map((value) => JSON.stringify(value)).join(', ')}`;
    default:
      return undefined;
  }
}

const identifier = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

function appendPath(base: string, segment: PropertyKey): string {
  if (typeof segment === 'number') return `${base}[${segment}]`;
  const key = String(segment);
  if (!identifier.test(key)) return `${base}[${JSON.stringify(key)}]`;
  return base === '' ? key : `${base}.${key}`;
}

function toValidationIssues(pathPrefix: string, zodIssues: readonly z.core.$ZodIssue[]): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  for (const issue of zodIssues) {
    const path = issue.path.reduce<string>(appendPath, pathPrefix);
    // Zod reports all unknown keys of an object at once; callers want each key's own path.
    if (issue.code === 'unrecognized_keys') issues.push(...issue.keys.map((key) => ({ path: appendPath(path, key), message: issue.message })));
    else issues.push({ path, message: issue.message });
  }
  return capIssues(pathPrefix, issues);
}

function capIssues(pathPrefix: string, issues: ValidationIssue[]): ValidationIssue[] {
  if (issues.length <= fieldLimits.maxIssuesListed) return issues;
  const listed = issues.slice(0, fieldLimits.maxIssuesListed);
  const more = issues.length - listed.length;
  return [...listed, { path: pathPrefix, message: `${plural(more, 'more problem')} not listed` }];
}

/**
 * JSON clients and GraphQL variables often send `null` for "not set". At the top level of a
 * config or value it means the same as leaving the key out (so defaults apply).
 */
function withoutNullKeys(input: unknown): unknown {
  if (!isPlainObject(input)) return input;
  return Object.fromEntries(Object.entries(input).filter(([, entry]) => entry !== null));
}

// ---------------------------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------------------------

/**
 * Returns the normalised config (defaults applied, unknown keys rejected) or issues.
 * `pathPrefix` e.g. "fields[2].config". A missing (`undefined` or `null`) config means `{}`.
 * When there are issues, `config` is `{}`: unvalidated input is never handed back.
 */
export function parseFieldConfig(type: FieldType, config: unknown, pathPrefix: string): { config: Record<string, unknown>; issues: ValidationIssue[] } {
  const schema = schemaForConfig(type);
  const result = schema.safeParse(withoutNullKeys(config ?? {}), { error: messageFor });
  if (result.success) return { config: result.data as Record<string, unknown>, issues: [] };
  return { config: {}, issues: toValidationIssues(pathPrefix, result.error.issues) };
}

/**
 * Validates a value against the type AND the (already parsed) config. `value === null/undefined`
 * means "no value" and is always valid here (requiredness is checked elsewhere). Returns the
 * normalised value (defaults applied) or `null` with issues.
 */
export function parseFieldValue(type: FieldType, value: unknown, config: Record<string, unknown>, pathPrefix: string): { value: Record<string, unknown> | null; issues: ValidationIssue[] } {
  if (value === null || value === undefined) return { value: null, issues: [] };
  const schema = schemaForValue(type, config);
  const result = schema.safeParse(withoutNullKeys(value), { error: messageFor });
  if (result.success) return { value: result.data as Record<string, unknown>, issues: [] };
  return { value: null, issues: toValidationIssues(pathPrefix, result.error.issues) };
}

// ---------------------------------------------------------------------------------------------
// Conditions (visibleWhen)
// ---------------------------------------------------------------------------------------------

/** The tests that compare with a `value`; the others take none. */
const COMPARING_TESTS = ['equal', 'not_equal', 'greater', 'less'];

const conditionSchema = z
  .strictObject({
    field: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, 'must be the identifier of a field'),
    is: z.enum(CONDITION_TESTS as unknown as [string, ...string[]]),
    value: z
      .union([boundedString({ min: 1, max: fieldLimits.conditionValueMaxLength, allowTabs: true, allowLineBreaks: true }), z.number(), z.boolean()], {
        error: 'must be a string, a finite number or true or false',
      })
      .optional(),
  })
  .superRefine((condition, ctx) => {
    const is = (condition as { is?: unknown }).is;
    if (typeof is !== 'string' || !CONDITION_TESTS.includes(is)) return;
    const compares = COMPARING_TESTS.includes(is);
    if (compares && condition.value === undefined) ctx.addIssue({ code: 'custom', path: ['value'], message: `is required: "${is}" compares the field with it` });
    if (!compares && condition.value !== undefined) ctx.addIssue({ code: 'custom', path: ['value'], message: `must be left out: "${is}" compares with nothing` });
  });

const conditionList = z.array(conditionSchema).min(1).max(fieldLimits.conditionsMax);

const visibleWhenSchema = z.strictObject({ all: conditionList.optional(), any: conditionList.optional() }).superRefine((visibleWhen, ctx) => {
  if (visibleWhen.all === undefined && visibleWhen.any === undefined) ctx.addIssue({ code: 'custom', message: 'must have all, any or both (or be null: always shown)' });
});

/**
 * A field's `visibleWhen`, its shape checked (what the conditions name is checked against the
 * owner's fields in field.service.ts): `null` or absent means "always shown".
 */
export function parseVisibleWhen(input: unknown, pathPrefix: string): { visibleWhen: Record<string, unknown> | null; issues: ValidationIssue[] } {
  if (input === null || input === undefined) return { visibleWhen: null, issues: [] };
  const result = visibleWhenSchema.safeParse(withoutNullKeys(input), { error: messageFor });
  if (result.success) return { visibleWhen: result.data as Record<string, unknown>, issues: [] };
  return { visibleWhen: null, issues: toValidationIssues(pathPrefix, result.error.issues) };
}

/**
 * The audit log's account of a biometric signature (the strokes themselves stay with the field
 * as evidence). `strokesSha256` is the hex SHA-256 of the canonical JSON of `strokes`: object
 * keys sorted (p, t, x, y), no white space, numbers as JSON.stringify writes them.
 * `pressureCaptured` is false when every sample has the same pressure: devices without a
 * pressure sensor report a constant (0.5 for a mouse under Pointer Events, 0 or 1 elsewhere).
 * Expects a value accepted by `parseFieldValue`.
 */
export function summariseBiometricValue(value: Record<string, unknown>): BiometricSummary {
  const strokes = value.strokes;
  if (!Array.isArray(strokes)) throw new TypeError('summariseBiometricValue needs a biometric_signature value accepted by parseFieldValue');
  const points = (strokes as BiometricPoint[][]).flat();
  // A loop, not Math.max(...times): 50 000 spread arguments can exceed the call stack.
  let earliest = Infinity;
  let latest = -Infinity;
  for (const point of points) {
    earliest = Math.min(earliest, point.t);
    latest = Math.max(latest, point.t);
  }
  const firstPressure = points[0]?.p;
  return {
    strokeCount: strokes.length,
    pointCount: points.length,
    durationMs: points.length === 0 ? 0 : Math.round(latest - earliest),
    pressureCaptured: points.some((point) => point.p !== firstPressure),
    strokesSha256: createHash('sha256')
      .update(canonicalStrokesJson(strokes as BiometricPoint[][]))
      .digest('hex'),
  };
}

function canonicalStrokesJson(strokes: BiometricPoint[][]): string {
  // The pointer type follows y only when the point has one, so points without it hash as before.
  return JSON.stringify(strokes.map((stroke) => stroke.map(({ p, t, x, y, pointerType }) => (pointerType === undefined ? { p, t, x, y } : { p, t, x, y, pointerType }))));
}

function schemaForConfig(type: FieldType): z.ZodType {
  const schema = configSchemas[type];
  if (schema === undefined) throw new TypeError(`Unknown field type: ${String(type)}`);
  return schema;
}

function schemaForValue(type: FieldType, config: Record<string, unknown>): z.ZodType {
  // Re-parsing is cheap and guarantees the defaults the value rules read; a config that fails
  // here was never accepted by parseFieldConfig, which is a programming error, not a request one.
  // The one exception is a text pattern stored before patterns had to be RE2: it is set aside
  // here and refuses values with a clear message (textValueSchema) rather than failing.
  const { pattern, ...withoutPattern } = config;
  const parsed = schemaForConfig(type).safeParse(type === 'text' ? withoutPattern : config);
  if (!parsed.success) throw new TypeError(`parseFieldValue needs a ${type} config accepted by parseFieldConfig`);
  const build = valueSchemaBuilders[type] as (config: unknown) => z.ZodType;
  return build(type === 'text' && typeof pattern === 'string' ? { ...(parsed.data as object), pattern } : parsed.data);
}
