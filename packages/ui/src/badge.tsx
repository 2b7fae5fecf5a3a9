import { cn } from "./cn.ts";

/** Mirrors @kiln/domain's OutcomeClass: whose problem a red result is. */
export type OutcomeClassName = "ok" | "your_code" | "platform" | "cancelled" | "timed_out" | "policy";

const CLASS_STYLE: Record<OutcomeClassName, { label: string; icon: string; tone: string; explain: string }> = {
  ok: {
    label: "success",
    icon: "✓",
    tone: "bg-emerald-50 text-emerald-800 ring-emerald-600/30 dark:bg-emerald-950 dark:text-emerald-300 dark:ring-emerald-400/30",
    explain: "Succeeded",
  },
  your_code: {
    label: "your code",
    icon: "✕",
    tone: "bg-red-50 text-red-800 ring-red-600/30 dark:bg-red-950 dark:text-red-300 dark:ring-red-400/30",
    explain: "Failed because of the code or workflow under test",
  },
  platform: {
    label: "platform",
    icon: "⚠",
    tone: "bg-amber-50 text-amber-900 ring-amber-600/40 dark:bg-amber-950 dark:text-amber-300 dark:ring-amber-400/30",
    explain: "Failed because of Kiln's infrastructure, not your code",
  },
  cancelled: {
    label: "cancelled",
    icon: "⊘",
    tone: "bg-zinc-100 text-zinc-700 ring-zinc-500/30 dark:bg-zinc-800 dark:text-zinc-300 dark:ring-zinc-400/30",
    explain: "Cancelled",
  },
  timed_out: {
    label: "timed out",
    icon: "⏱",
    tone: "bg-orange-50 text-orange-800 ring-orange-600/30 dark:bg-orange-950 dark:text-orange-300 dark:ring-orange-400/30",
    explain: "Exceeded its timeout",
  },
  policy: {
    label: "policy",
    icon: "⛔",
    tone: "bg-violet-50 text-violet-800 ring-violet-600/30 dark:bg-violet-950 dark:text-violet-300 dark:ring-violet-400/30",
    explain: "Blocked by a policy",
  },
};

const STATUS_STYLE: Record<string, { label: string; tone: string; pulse: boolean }> = {
  pending: {
    label: "queued",
    tone: "bg-zinc-100 text-zinc-700 ring-zinc-500/30 dark:bg-zinc-800 dark:text-zinc-300 dark:ring-zinc-400/30",
    pulse: false,
  },
  ready: {
    label: "queued",
    tone: "bg-zinc-100 text-zinc-700 ring-zinc-500/30 dark:bg-zinc-800 dark:text-zinc-300 dark:ring-zinc-400/30",
    pulse: false,
  },
  running: {
    label: "running",
    tone: "bg-blue-50 text-blue-800 ring-blue-600/30 dark:bg-blue-950 dark:text-blue-300 dark:ring-blue-400/30",
    pulse: true,
  },
  cancelling: {
    label: "cancelling",
    tone: "bg-zinc-100 text-zinc-700 ring-zinc-500/30 dark:bg-zinc-800 dark:text-zinc-300 dark:ring-zinc-400/30",
    pulse: true,
  },
};

export function outcomeLabel(cls: OutcomeClassName | null): string {
  return cls ? CLASS_STYLE[cls].label : "";
}

/**
 * The one badge for runs, jobs and attempts: while unfinished it shows the status, once finished
 * the outcome's class ("your code" vs "platform"), always as text and icon, never colour alone.
 */
export function StatusBadge({
  status,
  outcomeClass,
  className,
}: {
  status: string;
  outcomeClass: OutcomeClassName | null;
  className?: string;
}) {
  const base =
    "inline-flex items-center gap-1 rounded-full px-2 py-0.5 text-xs font-medium ring-1 ring-inset whitespace-nowrap";
  if (status === "completed" && outcomeClass) {
    const c = CLASS_STYLE[outcomeClass];
    return (
      <span className={cn(base, c.tone, className)} title={c.explain} data-outcome-class={outcomeClass}>
        <span aria-hidden="true">{c.icon}</span>
        {c.label}
      </span>
    );
  }
  const s = STATUS_STYLE[status] ?? { label: status, tone: STATUS_STYLE.pending!.tone, pulse: false };
  return (
    <span className={cn(base, s.tone, className)} data-status={status}>
      <span aria-hidden="true" className={cn("size-1.5 rounded-full bg-current", s.pulse && "animate-pulse")} />
      {s.label}
    </span>
  );
}
