import fs from 'node:fs';
import path from 'node:path';
import { newId } from '../ids.ts';
import type { LocalBlob } from './types.ts';

type Entry = { path: string; byteSize: number; pins: number; lastUsed: number };

/**
 * Local copies of remote objects for PDF work that needs random access (rendering, sealing,
 * attachments), bounded by total bytes: least recently used copies are deleted once the total
 * passes `maxBytes`, but never one that is held (pinned) by running work; while everything is
 * held the cache may stay over its bound until the work releases. Requests for the same object
 * while it downloads share the one download. Objects are immutable (content-addressed), so a
 * copy never goes stale.
 *
 * One cache per process and directory: copies left by an earlier run are adopted at start.
 */
export class BlobCache {
  readonly #directory: string;
  readonly #maxBytes: number;
  readonly #download: (sha256: string, targetPath: string) => Promise<void>;
  readonly #entries = new Map<string, Entry>();
  readonly #downloading = new Map<string, Promise<Entry>>();
  #totalBytes = 0;
  #clock = 0;

  constructor(options: { directory: string; maxBytes: number; download: (sha256: string, targetPath: string) => Promise<void> }) {
    this.#directory = options.directory;
    this.#maxBytes = options.maxBytes;
    this.#download = options.download;
    fs.mkdirSync(this.#directory, { recursive: true });
    for (const name of fs.readdirSync(this.#directory)) {
      const file = path.join(this.#directory, name);
      // A download cut off by a crash is never adopted.
      if (!/^[0-9a-f]{64}$/.test(name)) {
        fs.rmSync(file, { force: true, recursive: true });
        continue;
      }
      const size = fs.statSync(file).size;
      this.#entries.set(name, { path: file, byteSize: size, pins: 0, lastUsed: this.#clock++ });
      this.#totalBytes += size;
    }
    this.#evict();
  }

  get totalBytes(): number {
    return this.#totalBytes;
  }

  async acquire(sha256: string): Promise<LocalBlob> {
    let held = this.#entries.get(sha256);
    while (held === undefined) {
      let pending = this.#downloading.get(sha256);
      if (pending === undefined) {
        pending = this.#fetch(sha256).finally(() => this.#downloading.delete(sha256));
        this.#downloading.set(sha256, pending);
      }
      await pending;
      // Looked up again: between the download's end and this turn another user may have
      // released it and let it be evicted (then it is fetched again).
      held = this.#entries.get(sha256);
    }
    const entry = held;
    entry.pins += 1;
    entry.lastUsed = this.#clock++;
    // Pinned first, so making room never evicts the copy just handed out.
    this.#evict();
    let released = false;
    return {
      path: entry.path,
      release: () => {
        if (released) return;
        released = true;
        entry.pins -= 1;
        this.#evict();
      },
    };
  }

  async #fetch(sha256: string): Promise<Entry> {
    const finalPath = path.join(this.#directory, sha256);
    const partPath = path.join(this.#directory, `${newId()}.part`);
    try {
      await this.#download(sha256, partPath);
      await fs.promises.rename(partPath, finalPath);
    } catch (error) {
      await fs.promises.rm(partPath, { force: true });
      throw error;
    }
    const byteSize = (await fs.promises.stat(finalPath)).size;
    const entry: Entry = { path: finalPath, byteSize, pins: 0, lastUsed: this.#clock++ };
    this.#entries.set(sha256, entry);
    this.#totalBytes += byteSize;
    return entry;
  }

  #evict(): void {
    if (this.#totalBytes <= this.#maxBytes) return;
    const idle = [...this.#entries.entries()].filter(([, entry]) => entry.pins === 0).sort((a, b) => a[1].lastUsed - b[1].lastUsed);
    for (const [sha256, entry] of idle) {
      if (this.#totalBytes <= this.#maxBytes) return;
      this.#entries.delete(sha256);
      this.#totalBytes -= entry.byteSize;
      fs.rmSync(entry.path, { force: true });
    }
  }
}
