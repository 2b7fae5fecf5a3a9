"use client";
import { useState } from "react";

// Minutes per day as a plain SVG bar chart (no chart library): each bar is focusable, names its day
// and minutes to screen readers, and shows them in the caption when focused or hovered.

export interface DayMinutes {
  day: string;
  seconds: number;
  billableSeconds: number;
}

const W = 640;
const H = 160;
const PAD = 24;

function minutes(seconds: number): string {
  return (seconds / 60).toFixed(1);
}

export function MinutesChart({ days }: { days: DayMinutes[] }) {
  const [focus, setFocus] = useState<DayMinutes | null>(null);
  const max = Math.max(60, ...days.map((d) => d.seconds));
  const step = (W - PAD) / Math.max(days.length, 1);
  const bar = Math.max(2, Math.min(28, step - 4));
  return (
    <figure className="space-y-2" data-testid="minutes-chart">
      <svg
        viewBox={`0 0 ${W} ${H + PAD}`}
        className="h-48 w-full"
        role="group"
        aria-label={`Job-minutes per day, ${days.length} days with use`}
      >
        <line x1={PAD} y1={H} x2={W} y2={H} className="stroke-zinc-300 dark:stroke-zinc-700" />
        <text x={0} y={12} className="fill-zinc-500 text-[10px]">
          {minutes(max)}
        </text>
        {days.map((d, i) => {
          const x = PAD + i * step + (step - bar) / 2;
          const total = (d.seconds / max) * (H - 8);
          const billable = (d.billableSeconds / max) * (H - 8);
          const label = `${d.day}: ${minutes(d.seconds)} minutes, ${minutes(d.billableSeconds)} billable`;
          return (
            <g
              key={d.day}
              tabIndex={0}
              role="img"
              aria-label={label}
              onFocus={() => setFocus(d)}
              onBlur={() => setFocus(null)}
              onMouseEnter={() => setFocus(d)}
              onMouseLeave={() => setFocus(null)}
              className="outline-none focus:[&>rect]:stroke-sky-500 focus:[&>rect]:stroke-2"
            >
              <title>{label}</title>
              <rect x={x} y={H - total} width={bar} height={total} className="fill-zinc-300 dark:fill-zinc-700" />
              <rect x={x} y={H - billable} width={bar} height={billable} className="fill-sky-600" />
            </g>
          );
        })}
      </svg>
      <figcaption className="text-xs text-zinc-500 dark:text-zinc-400" aria-live="polite">
        {focus
          ? `${focus.day}: ${minutes(focus.seconds)} minutes (${minutes(focus.billableSeconds)} billable)`
          : "Blue: billable minutes; grey: not billable (platform failures). Tab through the days for values."}
      </figcaption>
    </figure>
  );
}
