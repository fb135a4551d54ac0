import type { Readable } from 'node:stream';

/** A file to send: its name, type, bytes as a stream, and whether it carries the service's seal. */
export type Download = { fileName: string; contentType: string; stream: Readable; sealed: boolean };
