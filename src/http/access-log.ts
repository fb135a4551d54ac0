import type { Logger } from '../shared/logger.ts';
import { redactSecrets } from '../shared/redact.ts';
import type { RequestMetadata } from '../shared/request-metadata.ts';

/**
 * The one access-log line of a request (at info), from yoga's logging plugin (app.ts) and from
 * the REST face served beside yoga (rest/serve.ts). The path only (never the query), with its
 * credential segments redacted: `/sign/[redacted]`.
 */
export function logRequest(logger: Logger, request: { metadata: RequestMetadata; method: string; pathname: string; status: number; startedAt: bigint | undefined }): void {
  if (!logger.isLevelEnabled('info')) return;
  const durationMs = request.startedAt === undefined ? undefined : Number(process.hrtime.bigint() - request.startedAt) / 1e6;
  logger.info(
    { requestId: request.metadata.requestId, method: request.method, path: redactSecrets(request.pathname), status: request.status, durationMs, ip: request.metadata.ip },
    'request',
  );
}
