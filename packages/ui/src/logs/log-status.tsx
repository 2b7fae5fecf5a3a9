import { cn } from "../cn.ts";
import { formatBytes } from "../format.ts";
import type { SourceState } from "./log-source.ts";

/** Where the stream stands, in words: a viewer must never look live when it is not. */
export function LogStatus({ state, lines, bytes }: { state: SourceState; lines: number; bytes: number }) {
  const [text, tone] = describe(state);
  return (
    <div className="flex items-center gap-2 text-xs" aria-live="polite">
      <span
        className={cn("inline-flex items-center gap-1.5 rounded-full px-2 py-0.5 font-medium", tone)}
        data-log-state={state.kind}
      >
        <span
          aria-hidden="true"
          className={cn("size-1.5 rounded-full bg-current", state.kind === "live" && "animate-pulse")}
        />
        {text}
      </span>
      <span className="tabular-nums text-zinc-500 dark:text-zinc-400">
        {lines.toLocaleString("en")} {lines === 1 ? "line" : "lines"} · {formatBytes(bytes)}
      </span>
    </div>
  );
}

function describe(s: SourceState): [string, string] {
  switch (s.kind) {
    case "connecting":
      return ["connecting", "bg-zinc-100 text-zinc-700 dark:bg-zinc-800 dark:text-zinc-300"];
    case "live":
      return ["live", "bg-blue-50 text-blue-800 dark:bg-blue-950 dark:text-blue-300"];
    case "reconnecting":
      return [
        `reconnecting in ${Math.ceil(s.inMs / 1000)}s`,
        "bg-amber-50 text-amber-900 dark:bg-amber-950 dark:text-amber-300",
      ];
    case "ended":
      if (s.how === "sealed")
        return ["complete", "bg-emerald-50 text-emerald-800 dark:bg-emerald-950 dark:text-emerald-300"];
      if (s.how === "empty")
        return ["no output: the job never started", "bg-zinc-100 text-zinc-700 dark:bg-zinc-800 dark:text-zinc-300"];
      return [
        s.how === "truncated" ? "complete (truncated)" : "complete (with gaps)",
        "bg-amber-50 text-amber-900 dark:bg-amber-950 dark:text-amber-300",
      ];
    case "gone":
      return [goneText(s), "bg-zinc-200 text-zinc-800 dark:bg-zinc-800 dark:text-zinc-200"];
    case "error":
      return [
        `unavailable${s.status ? ` (${s.status})` : ""}: ${s.message}`,
        "bg-red-50 text-red-800 dark:bg-red-950 dark:text-red-300",
      ];
  }
}

/** "deleted by retention on 2027-03-03" / "deleted: its encryption key was destroyed on …". */
export function goneText(s: { why: "expired" | "shredded"; at: string | null }): string {
  const on = s.at ? ` on ${s.at.slice(0, 10)}` : "";
  return s.why === "expired"
    ? `deleted by retention${on}`
    : `deleted under retention: its encryption key was destroyed${on}`;
}
