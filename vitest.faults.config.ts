import { defineConfig } from 'vitest/config';
import base from './vitest.config.ts';

/**
 * The fault suite (`npm run test:faults`, docs/operations.md "What happens when …"): PostgreSQL
 * restarted under load, SMTP down, the process killed mid-work, a full disk, slow clients, an
 * object store that hangs, instances starting at once on an empty database.
 * Each file starts what it breaks (a private PostgreSQL cluster, the service as a real process,
 * an SMTP server, a small tmpfs), so the files run one after another: they are heavy, and timing
 * matters to them on a machine of two cores. Plain `npm test` leaves test/faults out.
 */
export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: ['test/faults/**/*.test.ts'],
    exclude: ['**/node_modules/**'],
    fileParallelism: false,
    testTimeout: 180_000,
    hookTimeout: 120_000,
  },
});
