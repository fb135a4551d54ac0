import pino, { type Logger } from 'pino';

export type { Logger };

/** Structured JSON logs on stdout; request-scoped children add `requestId` to every line. */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  const options: pino.LoggerOptions = {
    level,
    base: { service: 'envelope-service' },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    redact: { paths: ['apiKey', 'headers["x-service-api-key"]', 'headers["x-signing-token"]'], censor: '[redacted]' },
  };
  return destination ? pino(options, destination) : pino(options);
}
