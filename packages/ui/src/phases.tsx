import { cn } from "./cn.ts";
import { formatDuration } from "./format.ts";

export interface Phases {
  queued_ms: number | null;
  image_preparation_ms: number | null;
  dispatch_ms: number | null;
  execution_ms: number | null;
  artifact_finalization_ms: number | null;
}

export const PHASES: { key: keyof Phases; label: string; color: string }[] = [
  { key: "queued_ms", label: "Queued", color: "bg-zinc-400 dark:bg-zinc-500" },
  { key: "image_preparation_ms", label: "Image preparation", color: "bg-sky-400 dark:bg-sky-600" },
  { key: "dispatch_ms", label: "Dispatch", color: "bg-indigo-400 dark:bg-indigo-500" },
  { key: "execution_ms", label: "Execution", color: "bg-emerald-500 dark:bg-emerald-600" },
  { key: "artifact_finalization_ms", label: "Artifact finalisation", color: "bg-amber-400 dark:bg-amber-500" },
];

/**
 * Where an attempt's time went. Queueing and image preparation are the platform's time; execution
 * is the job's. Unknown phases (an attempt that never reached them) show as a dash, not zero.
 */
export function PhaseBreakdown({ phases, className }: { phases: Phases; className?: string }) {
  const total = PHASES.reduce((s, p) => s + (phases[p.key] ?? 0), 0);
  return (
    <div className={cn("space-y-1.5", className)}>
      <div
        className="flex h-2 w-full overflow-hidden rounded-full bg-zinc-100 dark:bg-zinc-800"
        role="img"
        aria-label={PHASES.map((p) => `${p.label} ${formatDuration(phases[p.key])}`).join(", ")}
      >
        {total > 0
          ? PHASES.map((p) => {
              const v = phases[p.key] ?? 0;
              return v > 0 ? <div key={p.key} className={p.color} style={{ width: `${(v / total) * 100}%` }} /> : null;
            })
          : null}
      </div>
      <dl className="grid grid-cols-2 gap-x-4 gap-y-0.5 text-xs sm:grid-cols-5">
        {PHASES.map((p) => (
          <div key={p.key} className="flex items-center gap-1.5">
            <span aria-hidden="true" className={cn("size-2 shrink-0 rounded-sm", p.color)} />
            <dt className="text-zinc-500 dark:text-zinc-400">{p.label}</dt>
            <dd className="ml-auto tabular-nums sm:ml-1">{formatDuration(phases[p.key])}</dd>
          </div>
        ))}
      </dl>
    </div>
  );
}
