/**
 * Jain's fairness index, (sum x)^2 / (n * sum x^2): 1 when all equal, 1/n when one takes all.
 * An empty or all-zero input is vacuously fair (1).
 */
export function jainIndex(xs: readonly number[]): number {
  // Divide by the largest share first: the index is scale-free, and squaring raw values underflows
  // to 0 for tiny shares (2e-163 squared) or overflows for huge ones, which made [0, 2e-163] read 1.
  let max = 0;
  for (const x of xs) if (x > max) max = x;
  if (xs.length === 0 || max === 0) return 1;
  let sum = 0;
  let sumSquares = 0;
  for (const x of xs) {
    const r = x / max;
    sum += r;
    sumSquares += r * r;
  }
  return (sum * sum) / (xs.length * sumSquares);
}

/** Nearest-rank percentile, p in [0, 100]; NaN for an empty input. Does not mutate `xs`. */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return Number.NaN;
  const sorted = Float64Array.from(xs).sort();
  return percentileOfSorted(sorted, p);
}

/** As percentile, for input already sorted ascending (avoids re-sorting for several p). */
export function percentileOfSorted(sorted: ArrayLike<number>, p: number): number {
  const n = sorted.length;
  if (n === 0) return Number.NaN;
  const clamped = Math.min(100, Math.max(0, p));
  const rank = Math.max(1, Math.ceil((clamped / 100) * n));
  return sorted[rank - 1] as number;
}
