import type { ZipArchive } from 'archiver';

/**
 * Settles when the archive has written the entry appended next (or has closed or failed), so a
 * streamed ZIP opens each source only once the one before it is written: memory stays flat and
 * a client that goes away stops the work before the next source.
 */
export function nextEntryWritten(archive: ZipArchive): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      archive.off('entry', done);
      archive.off('close', done);
      archive.off('error', done);
      resolve();
    };
    archive.on('entry', done);
    archive.on('close', done);
    archive.on('error', done);
  });
}
