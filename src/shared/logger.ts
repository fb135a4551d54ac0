import pino, { type Logger } from 'pino';

export type { Logger };

/** Structured JSON logs on stdout; request-scoped children add `requestId` to every line. */
export function createLogger(level: string): Logger {
  return pino({
    level,
    base: { service: 'envelope-service' },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    redact: { paths: ['apiKey', 'headers["x-service-api-key"]', 'headers["x-signing-token"]'], censor: '[redacted]' },
  });
}
