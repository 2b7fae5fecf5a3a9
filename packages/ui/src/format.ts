// Formatting shared by every page, so a duration or a time reads the same everywhere.

export function formatDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return "—";
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s < 10 ? s.toFixed(1) : Math.round(s)} s`;
  const m = Math.floor(s / 60);
  const rs = Math.round(s % 60);
  if (m < 60) return rs ? `${m}m ${rs}s` : `${m}m`;
  const h = Math.floor(m / 60);
  return `${h}h ${m % 60}m`;
}

export function durationBetween(from: string | null, to: string | null, now: number): number | null {
  if (!from) return null;
  const end = to ? Date.parse(to) : now;
  return end - Date.parse(from);
}

export function formatRelative(iso: string | null, now: number): string {
  if (!iso) return "—";
  const d = (now - Date.parse(iso)) / 1000;
  // The future too: schedules' next runs and waiting jobs' estimated starts (issue 20).
  if (d < -5) {
    const f = -d;
    if (f < 60) return `in ${Math.round(f)}s`;
    if (f < 3600) return `in ${Math.round(f / 60)}m`;
    if (f < 86_400) return `in ${Math.round(f / 3600)}h`;
    return `in ${Math.round(f / 86_400)}d`;
  }
  if (d < 5) return "just now";
  if (d < 60) return `${Math.round(d)}s ago`;
  if (d < 3600) return `${Math.round(d / 60)}m ago`;
  if (d < 86_400) return `${Math.round(d / 3600)}h ago`;
  return `${Math.round(d / 86_400)}d ago`;
}

/** Absolute time for titles and tooltips, in the viewer's locale and zone. */
export function formatTimestamp(iso: string | null): string {
  return iso ? new Date(iso).toLocaleString() : "—";
}

export function formatBytes(n: number | null): string {
  if (n === null) return "—";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${u === 0 ? v : v.toFixed(1)} ${units[u]}`;
}

export function formatPercent(ratio: number | null): string {
  if (ratio === null) return "—";
  const p = ratio * 100;
  return `${p === 0 || p >= 10 ? p.toFixed(0) : p.toFixed(1)}%`;
}

export function shortSha(sha: string): string {
  return sha.slice(0, 8);
}

/** refs/heads/main -> main; refs/pull/12/merge -> PR 12; anything else unchanged. */
export function shortRef(ref: string | null): string {
  if (!ref) return "—";
  const pr = /^refs\/pull\/(\d+)\//.exec(ref);
  if (pr) return `PR ${pr[1]}`;
  return ref.replace(/^refs\/(heads|tags)\//, "");
}
