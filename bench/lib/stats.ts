// Percentiles and formatting for benchmark reports. Nearest-rank percentiles over raw samples.
export function percentile(samples: number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const s = [...samples].sort((a, b) => a - b);
  const rank = Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1));
  return s[rank] ?? Number.NaN;
}

export function median(xs: number[]): number {
  return percentile(xs, 50);
}

export const ms = (x: number) => `${x.toFixed(1)} ms`;
