import type { ComponentType, ReactNode } from "react";
import { StatusBadge, type OutcomeClassName } from "./badge.tsx";
import { cn } from "./cn.ts";
import { layoutJobGraph, type GraphJob } from "./job-graph-layout.ts";

export interface JobGraphNode extends GraphJob {
  status: string;
  outcomeClass: OutcomeClassName | null;
  /** Short secondary text: duration, attempt count. */
  detail?: string;
  href: string;
}

export type LinkLike = ComponentType<{ href: string; className?: string; children: ReactNode; "aria-label"?: string }>;

const W = 208;
const H = 60;
const GAP_X = 56;
const GAP_Y = 12;

/** The run's jobs as a left-to-right graph; each node links to that job's log. */
export function JobGraph({
  jobs,
  highlightId,
  Link,
}: {
  jobs: JobGraphNode[];
  highlightId?: string | null;
  Link: LinkLike;
}) {
  const layout = layoutJobGraph(jobs);
  const width = layout.columns.length * (W + GAP_X) - GAP_X;
  const height = Math.max(...layout.columns.map((c) => c.length), 1) * (H + GAP_Y) - GAP_Y;
  const at = (id: string) => {
    const p = layout.position.get(id) ?? { column: 0, row: 0 };
    return { x: p.column * (W + GAP_X), y: p.row * (H + GAP_Y) };
  };
  return (
    <div className="overflow-x-auto pb-2">
      <div className="relative" style={{ width, height }}>
        <svg
          aria-hidden="true"
          width={width}
          height={height}
          className="absolute inset-0 text-zinc-300 dark:text-zinc-700"
        >
          {layout.edges.map(([from, to]) => {
            const a = at(from);
            const b = at(to);
            const x1 = a.x + W;
            const y1 = a.y + H / 2;
            const x2 = b.x;
            const y2 = b.y + H / 2;
            const mx = (x1 + x2) / 2;
            return (
              <path
                key={`${from}-${to}`}
                d={`M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}`}
                fill="none"
                stroke="currentColor"
                strokeWidth={1.5}
              />
            );
          })}
        </svg>
        <ol className="contents">
          {jobs.map((j) => {
            const p = at(j.id);
            return (
              <li key={j.id} className="absolute" style={{ left: p.x, top: p.y, width: W, height: H }}>
                <Link
                  href={j.href}
                  aria-label={`${j.name}: ${j.status === "completed" ? (j.outcomeClass ?? j.status) : j.status}${j.needs.length ? `, needs ${j.needs.join(", ")}` : ""}`}
                  className={cn(
                    "flex h-full flex-col justify-between rounded-md border bg-white px-2.5 py-1.5 text-sm shadow-sm transition-colors hover:border-zinc-400 dark:bg-zinc-900 dark:hover:border-zinc-500",
                    "focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-blue-600",
                    j.id === highlightId
                      ? "border-red-400 ring-2 ring-red-300 dark:border-red-600 dark:ring-red-800"
                      : "border-zinc-200 dark:border-zinc-700",
                  )}
                >
                  <span className="truncate font-medium" title={j.name}>
                    {j.name}
                  </span>
                  <span className="flex items-center justify-between gap-2">
                    <StatusBadge status={j.status} outcomeClass={j.outcomeClass} />
                    {j.detail ? (
                      <span className="truncate text-xs text-zinc-500 dark:text-zinc-400">{j.detail}</span>
                    ) : null}
                  </span>
                </Link>
              </li>
            );
          })}
        </ol>
      </div>
    </div>
  );
}
