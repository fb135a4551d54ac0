import type { Readable } from 'node:stream';

/**
 * A file to send: its name, type, whether it carries the service's seal, and either its bytes as
 * a stream or (DOWNLOAD_REDIRECT) a short-lived URL at which the object store serves them.
 */
export type Download = { fileName: string; contentType: string; sealed: boolean } & ({ stream: Readable; redirectUrl?: undefined } | { redirectUrl: string; stream?: undefined });
