import fs from 'node:fs';
import path from 'node:path';
import { type Browser, chromium } from 'playwright-core';

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
