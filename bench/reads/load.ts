/**
 * One load pass with autocannon against one server. Latencies are collected from autocannon's
 * per-response event (sub-millisecond resolution) rather than its histogram, which records whole
 * milliseconds: the bare handlers answer in a few milliseconds, where that rounding matters.
 */
import type { EventEmitter } from 'node:events';
import autocannon from 'autocannon';

export type Request = { method: 'GET' | 'POST'; url: string; headers: Record<string, string>; body?: string };

export type LoadResult = { requests: number; seconds: number; requestsPerSecond: number; p50: number; p99: number };

/** The value below which `fraction` of the sorted samples lie (nearest rank). */
export function percentile(sorted: Float64Array | number[], fraction: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(fraction * sorted.length) - 1))];
}

export async function runLoad(request: Request, options: { connections: number; seconds: number }): Promise<LoadResult> {
  const latencies: number[] = [];
  const instance = autocannon({
    url: request.url,
    method: request.method,
    headers: request.headers,
    body: request.body,
    connections: options.connections,
    duration: options.seconds,
    // Our GraphQL page takes ~0.3 s at 10 connections; a stuck request should fail the run, not hang it.
    timeout: 30,
  }) as unknown as EventEmitter & Promise<autocannon.Result & { statusCodeStats?: Record<string, { count: number }> }>;
  instance.on('response', (_client: unknown, _status: number, _bytes: number, milliseconds: number) => latencies.push(milliseconds));
  const result = await instance;
  if (result.errors > 0 || result.timeouts > 0 || result.non2xx > 0) {
    throw new Error(`${request.method} ${request.url}: ${result.errors} errors, ${result.timeouts} timeouts, non-2xx answers ${JSON.stringify(result.statusCodeStats)}`);
  }
  const sorted = Float64Array.from(latencies).sort();
  return {
    requests: result['2xx'],
    seconds: result.duration,
    requestsPerSecond: result['2xx'] / result.duration,
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
  };
}
