import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import { testDatabase } from './test/helpers/database-kind.ts';

const require = createRequire(import.meta.url);

// PGlite serves every connection from one session, so files side by side would interleave their
// statements there (an unnamed prepared statement of one file replaced by another's): one file at
// a time on the embedded database.
const { kind } = await testDatabase();

export default defineConfig({
  resolve: {
    // graphql 16 has no "exports": Node resolves it to the CommonJS build for the libraries
    // (yoga, Pothos), while Vite would pick the ESM build for our sources. Two copies of
    // graphql break instanceof checks, so everything gets the one Node uses in production.
    alias: [{ find: /^graphql$/, replacement: require.resolve('graphql') }],
  },
  test: {
    include: ['test/**/*.test.ts'],
    // The fault suite runs on its own (npm run test:faults, vitest.faults.config.ts).
    exclude: ['**/node_modules/**', 'test/faults/**'],
    globalSetup: ['test/helpers/global-setup.ts'],
    // A test's bound only catches a hang, never a latency (latency is for bench/). 30 s was passed
    // by tests that take 4–10 s on a quiet machine when the default suite ran beside other suites
    // and six helpers' work (load average 24 on two cores, 2026-11-27): 120 s keeps a hang caught
    // without failing a busy machine.
    testTimeout: 120_000,
    // expect.poll waits for something the service does on its own; vitest's default gives up after
    // 1 s, which a loaded 2-core machine can take. As test/helpers/eventually.ts: a hang bound.
    expect: { poll: { timeout: 60_000 } },
    hookTimeout: 180_000,
    // Each file starts its own app on a free port against the shared test database; files seed
    // their own teams, so they can run side by side.
    pool: 'forks',
    // Two files at a time even on two cores (vitest's default there is one): most of a file's time
    // is spent waiting on PostgreSQL, Chromium, pdfsig and its own server, and the suite takes
    // about half as long (docs/decisions.md, "Two test files at a time"). One on the embedded database.
    maxWorkers: kind === 'server' ? Math.max(2, availableParallelism() - 1) : 1,
  },
});
