"use client";
import { formatDuration, formatRelative, formatTimestamp } from "@kiln/ui";
import { useEffect, useState } from "react";

/** A clock that ticks while something is live, so durations and "ago" stay current. */
export function useNow(intervalMs = 1000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), intervalMs);
    return () => clearInterval(t);
  }, [intervalMs]);
  return now;
}

// Server and browser clocks differ by the render delay, so relative times may differ at hydration:
// suppressHydrationWarning accepts the browser's text for these leaf nodes only.
export function RelativeTime({ iso, now }: { iso: string | null; now: number }) {
  return (
    <time dateTime={iso ?? undefined} title={formatTimestamp(iso)} suppressHydrationWarning>
      {formatRelative(iso, now)}
    </time>
  );
}

export function Elapsed({ from, to, now }: { from: string | null; to: string | null; now: number }) {
  const ms = from ? (to ? Date.parse(to) : now) - Date.parse(from) : null;
  return (
    <span suppressHydrationWarning className="tabular-nums">
      {formatDuration(ms)}
    </span>
  );
}
