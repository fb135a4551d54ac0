import pino, { type Logger } from 'pino';
import { redactSecrets } from './redact.ts';

export type { Logger };

/**
 * Structured JSON logs on stdout; request-scoped children add `requestId` to every line. Every
 * line passes `redactSecrets` on its way out, whoever wrote it and wherever in the line a link or
 * a token sits (a message, an error's stack, a bound field): no bearer credential reaches the log.
 */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  const options: pino.LoggerOptions = {
    level,
    base: { service: 'envelope-service' },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    redact: { paths: ['apiKey', 'headers["x-service-api-key"]', 'headers["x-signing-token"]', 'headers.authorization', 'headers.cookie'], censor: '[redacted]' },
    hooks: { streamWrite: redactSecrets },
  };
  return destination ? pino(options, destination) : pino(options);
}
