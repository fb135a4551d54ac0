import { formatDate, formatNumber } from './field-rules.js';

/**
 * A value as a person reads it, for the types read as text (issue 32): a date in its field's
 * format, a number or a formula's result with its decimals, prefix and suffix, a dropdown's label,
 * the service's name or email, an attachment's file names. Written with field-rules.js, the module the signing page shows
 * values with, so the sealed PDF and the certificate of completion read as the page did. Answers
 * undefined for other types (drawn their own way) and for a value without its key.
 */
export function displayText(type: string, value: Record<string, unknown>, config: Record<string, unknown>, locale: string): string | undefined {
  switch (type) {
    case 'date':
    case 'date_signed':
      return typeof value.date === 'string' ? formatDate(value.date, typeof config.format === 'string' ? config.format : 'YYYY-MM-DD', locale) : undefined;
    case 'number':
      return typeof value.number === 'number' ? formatNumber(value.number, config, locale) : undefined;
    case 'formula':
      return typeof value.number === 'number' ? formatNumber(value.number, { ...config, decimals: typeof config.decimals === 'number' ? config.decimals : 2 }, locale) : undefined;
    case 'dropdown': {
      const options = Array.isArray(config.options) ? (config.options as { value: string; label: string }[]) : [];
      return options.find((option) => option.value === value.selected)?.label ?? (typeof value.selected === 'string' ? value.selected : undefined);
    }
    case 'full_name':
    case 'email':
      return typeof value.text === 'string' ? value.text : undefined;
    case 'attachment':
      // The files by name, in the value's order (the certificate adds each one's hash).
      return Array.isArray(value.files) ? (value.files as { name?: unknown }[]).map((file) => String(file.name ?? '')).join(', ') : undefined;
    default:
      return undefined;
  }
}
