import fs from 'node:fs';
import path from 'node:path';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import { type SeededTeam, seedTeam, startTestApp, type TestApp } from './harness.ts';

/** Debian's Chromium, installed by .ci/run; Playwright never downloads a browser here. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * Headless Chromium on a machine where every host but this one is unreachable: any asset a page
 * tried to fetch from elsewhere fails, as it would air-gapped or under a strict proxy. The
 * background-networking flags stop the browser's own calls home. (Playwright gives each launch a
 * fresh profile of its own.)
 */
export async function launchOfflineChromium(): Promise<Browser> {
  if (!fs.existsSync(CHROMIUM_PATH)) throw new Error(`Chromium not found at ${CHROMIUM_PATH} (install Debian's chromium package, as .ci/run does, or set CHROMIUM_PATH)`);
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
    ],
  });
}

/** Screenshots land here (CI keeps the directory). */
export function screenshotPath(name: string): string {
  const directory = path.resolve('test-results');
  fs.mkdirSync(directory, { recursive: true });
  return path.join(directory, name);
}

/**
 * The setup of a browser test file (the signing page's): registers, in the calling file, a
 * `beforeAll` that starts a test app, offline Chromium and a seeded team and hands them to
 * `receive` (60 s allowed: Chromium's first start is slow), and an `afterAll` that closes them.
 */
export function withAppBrowserAndTeam(receive: (started: { app: TestApp; browser: Browser; team: SeededTeam }) => void): void {
  let app: TestApp | undefined;
  let browser: Browser | undefined;
  beforeAll(async () => {
    app = await startTestApp();
    browser = await launchOfflineChromium();
    receive({ app, browser, team: await seedTeam(app) });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });
}
