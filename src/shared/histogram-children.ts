import type { Histogram } from 'prom-client';

/*
 * Precomputed histogram children: the series of one label set, resolved once and then updated
 * without prom-client's per-observation work (turning the labels into an object again, checking
 * every label name, hashing them into a key, looking the key up). prom-client's own `labels()`
 * child still does all of that on every `observe`, so the series' value object is kept here
 * instead and updated the way prom-client's `observe` updates it (prom-client 15: `hashMap`
 * entries of `{ sum, count, bucketValues }` by upper bound, `upperBounds` ascending). A reset
 * replaces the histogram's `hashMap`, so a child made before it is resolved again.
 * test/metrics.test.ts reads the exposition, which is what this must keep right.
 */

type Series = { labels: Record<string, string>; sum: number; count: number; bucketValues: Record<number, number> };
type Internals = { hashMap: Record<string, Series>; upperBounds: number[] };
type Child = { map: Record<string, Series>; series: Series };
/** Children by their label values, one level per label in the order the caller names them. */
type Level = Map<string, Level | Child>;

const childrenByHistogram = new WeakMap<object, Level>();
let childCount = 0;

/**
 * Records `value` under `labels` (every label of the histogram) with the series resolved once per
 * label set. `values` are the same label values in a fixed order, the lookup path: no key is
 * built per observation.
 */
export function observeLabelled<Label extends string>(histogram: Histogram<Label>, labels: Record<Label, string>, values: readonly string[], value: number): void {
  const internals = histogram as unknown as Internals;
  let level = childrenByHistogram.get(histogram);
  if (!level) {
    level = new Map();
    childrenByHistogram.set(histogram, level);
  }
  for (let index = 0; index < values.length - 1; index += 1) {
    let next = level.get(values[index]) as Level | undefined;
    if (!next) {
      next = new Map();
      level.set(values[index], next);
    }
    level = next;
  }
  const last = values[values.length - 1];
  const child = level.get(last) as Child | undefined;
  if (child && child.map === internals.hashMap && Number.isFinite(value)) {
    const { series } = child;
    series.sum += value;
    series.count += 1;
    const bounds = internals.upperBounds;
    for (let index = 0; index < bounds.length; index += 1) {
      if (value <= bounds[index]) {
        series.bucketValues[bounds[index]] += 1;
        break;
      }
    }
    return;
  }
  // The first observation of a label set (or after a reset) goes through prom-client, which makes the series.
  histogram.observe(labels as never, value);
  const series = Object.values(internals.hashMap).find((candidate) => Object.entries(labels).every(([name, labelValue]) => candidate.labels[name] === labelValue));
  // Bounded like the label sets themselves (routes are templates, operation names are capped).
  if (series && childCount < 10_000) {
    if (!child) childCount += 1;
    level.set(last, { map: internals.hashMap, series });
  }
}
