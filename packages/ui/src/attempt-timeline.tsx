import { StatusBadge, type OutcomeClassName } from "./badge.tsx";
import { cn } from "./cn.ts";
import { durationBetween, formatDuration, formatTimestamp } from "./format.ts";
import { PhaseBreakdown, type Phases } from "./phases.tsx";

export interface TimelineAttempt {
  epoch: number;
  status: string;
  outcomeClass: OutcomeClassName | null;
  cause: string | null;
  cause_message: string | null;
  host: string;
  exit_code: number | null;
  started_at: string | null;
  finished_at: string | null;
  phases: Phases;
}

/**
 * A job's attempts on one time axis. Each epoch is a fenced attempt: a platform failure ends one
 * and the next epoch starts on another host, so the bars show both what was retried and why.
 */
export function AttemptTimeline({ attempts, now }: { attempts: TimelineAttempt[]; now: number }) {
  if (attempts.length === 0)
    return <p className="text-sm text-zinc-500 dark:text-zinc-400">No attempts: the job never started.</p>;
  const starts = attempts.map((a) => (a.started_at ? Date.parse(a.started_at) : now));
  const ends = attempts.map((a) => (a.finished_at ? Date.parse(a.finished_at) : now));
  const t0 = Math.min(...starts);
  const span = Math.max(1, Math.max(...ends) - t0);
  return (
    <ol className="space-y-3">
      {attempts.map((a, i) => {
        const left = ((starts[i]! - t0) / span) * 100;
        const width = Math.max(1, ((ends[i]! - starts[i]!) / span) * 100);
        return (
          <li key={a.epoch} className="space-y-1.5" data-epoch={a.epoch}>
            <div className="flex flex-wrap items-center gap-2 text-sm">
              <span className="font-medium">Epoch {a.epoch}</span>
              <StatusBadge status={a.status} outcomeClass={a.outcomeClass} />
              <span className="text-zinc-500 dark:text-zinc-400">on {a.host}</span>
              <span
                className="text-zinc-500 dark:text-zinc-400"
                title={`${formatTimestamp(a.started_at)} → ${formatTimestamp(a.finished_at)}`}
              >
                {formatDuration(durationBetween(a.started_at, a.finished_at, now))}
              </span>
              {a.exit_code !== null ? (
                <span className="font-mono text-xs text-zinc-500">exit {a.exit_code}</span>
              ) : null}
            </div>
            <div className="relative h-2 rounded-full bg-zinc-100 dark:bg-zinc-800" aria-hidden="true">
              <div
                className={cn(
                  "absolute h-2 rounded-full",
                  a.status !== "completed"
                    ? "animate-pulse bg-blue-500"
                    : a.outcomeClass === "ok"
                      ? "bg-emerald-500"
                      : a.outcomeClass === "platform"
                        ? "bg-amber-500"
                        : a.outcomeClass === "your_code"
                          ? "bg-red-500"
                          : "bg-zinc-400",
                )}
                style={{ left: `${left}%`, width: `${Math.min(width, 100 - left)}%` }}
              />
            </div>
            {a.status === "completed" && a.outcomeClass !== "ok" ? (
              <p className="text-sm">
                <span className="text-zinc-500 dark:text-zinc-400">Ended: </span>
                <code className="rounded bg-zinc-100 px-1 py-0.5 text-xs dark:bg-zinc-800">{a.cause ?? "unknown"}</code>
                {a.cause_message ? <span className="ml-1.5">{a.cause_message}</span> : null}
                {/* A reclaim of interruptible capacity (ADR 0035) is the capacity's doing, not the
                    infrastructure failing: shown apart, as the re-dispatch it caused. */}
                {a.cause === "host.reclaimed" ? (
                  <span
                    className="ml-1.5 rounded bg-sky-100 px-1 text-xs text-sky-800 dark:bg-sky-900 dark:text-sky-200"
                    data-testid="attempt-reclaimed"
                  >
                    reclaimed: re-dispatched to on-demand capacity
                  </span>
                ) : null}
              </p>
            ) : null}
            <PhaseBreakdown phases={a.phases} />
          </li>
        );
      })}
    </ol>
  );
}
