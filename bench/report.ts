/**
 * What every benchmark shares in how it runs and reports:
 *
 * - the quickest mode (`--quick` or BENCH_QUICK=1): seconds, tiny counts, the whole path run once
 *   so that CI (`npm run bench:quick`) sees a bench still works; its figures are not judged;
 * - one machine-readable line per figure after the table, `RESULT <name> <value>`, which
 *   `npm run bench:quick` requires and a person or script can grep without parsing a table.
 */
export const QUICK = process.env.BENCH_QUICK === '1' || process.argv.includes('--quick');

/** Options for `parseArgs`: every bench accepts `--quick`. */
export const QUICK_OPTION = { quick: { type: 'boolean' as const } };

export function printResult(name: string, value: number): void {
  if (!/^[a-z0-9_]+$/.test(name)) throw new Error(`a RESULT name is lower-case letters, digits and _: ${name}`);
  console.log(`RESULT ${name} ${Number.isFinite(value) ? Number(value.toPrecision(4)) : 'NaN'}`);
}

/** The median; of an even count, the mean of the middle two. */
export function median(numbers: number[]): number {
  const sorted = [...numbers].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}
