/**
 * PDFs encrypted with an owner password only ("restrict editing", no password to open) are
 * decrypted with qpdf (Debian's package, installed by .ci/run and the Dockerfile): the uploaded
 * bytes are stored as they came, and inspection and rendering read a decrypted copy. A file that
 * needs a user password cannot be opened without it and stays refused (`Document.Encrypted`).
 * qpdf runs as a child process, so the event loop only waits for it.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';

/** Decrypts `inputPath` into `outputPath` with the empty user password; false when that is not possible. */
export function decryptWithoutPassword(inputPath: string, outputPath: string, timeoutMs = 60_000): Promise<boolean> {
  return new Promise((resolve) => {
    execFile('qpdf', ['--decrypt', inputPath, outputPath], { timeout: timeoutMs, maxBuffer: 1024 * 1024 }, (error) => {
      // Exit 0: done; 3: done with warnings (damaged but recovered). 2 (wrong password, broken
      // file), a missing qpdf or the time limit: not decrypted.
      const code: unknown = error === null ? 0 : (error as { code?: unknown }).code;
      if (code === 0 || code === 3) return resolve(true);
      void fs.promises.rm(outputPath, { force: true }).then(() => resolve(false));
    });
  });
}
