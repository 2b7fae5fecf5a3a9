"use client";
import type { CSSProperties, ReactNode } from "react";
import { cn } from "../cn.ts";
import { DEFAULT_STYLE } from "./ansi.ts";
import { LineContent } from "./log-line.tsx";
import type { LogLines } from "./log-lines.ts";

interface RowContext {
  model: LogLines;
  /** Lower-cased search query, highlighted in the text. */
  q: string;
  gutter: CSSProperties;
  selected: number | null;
  activeRow: number;
  permalinks: boolean;
}

/** The rows in the window [start, end): complete lines, markers, then the still-open lines. */
export function logRows(start: number, end: number, ctx: RowContext): ReactNode[] {
  const { model } = ctx;
  const pending = model.pending();
  const rows: ReactNode[] = [];
  for (let r = start; r < end; r++) {
    if (r >= model.length) {
      const p = pending[r - model.length];
      if (p) rows.push(<PendingRow key={`p${r}`} text={p.text} ctx={ctx} />);
      continue;
    }
    const kind = model.kind(r);
    if (kind === "gap" || kind === "truncated" || kind === "attempt")
      rows.push(<MarkerRow key={r} kind={kind} text={model.text(r)} />);
    else rows.push(<LineRow key={r} r={r} stderr={kind === "stderr"} ctx={ctx} />);
  }
  return rows;
}

function PendingRow({ text, ctx }: { text: string; ctx: RowContext }) {
  return (
    <div className="flex h-5 text-zinc-500 dark:text-zinc-400" data-pending="true">
      <span style={ctx.gutter} className="shrink-0 select-none pr-3 text-right text-zinc-400">
        …
      </span>
      <span className="whitespace-pre">
        <LineContent text={text} start={DEFAULT_STYLE} query={ctx.q} />
      </span>
    </div>
  );
}

function MarkerRow({ kind, text }: { kind: "gap" | "truncated" | "attempt"; text: string }) {
  return (
    <div
      role="note"
      className={cn(
        "flex h-5 items-center gap-2 px-3 font-sans text-xs font-medium",
        kind === "attempt"
          ? "bg-blue-50 text-blue-900 dark:bg-blue-950 dark:text-blue-200"
          : "bg-amber-100 text-amber-900 dark:bg-amber-950 dark:text-amber-200",
      )}
      data-marker={kind}
    >
      <span aria-hidden="true">{kind === "attempt" ? "↻" : "⚠"}</span>
      {text}
    </div>
  );
}

function LineRow({ r, stderr, ctx }: { r: number; stderr: boolean; ctx: RowContext }) {
  const { model } = ctx;
  const n = model.lineNumber(r);
  const gutterClass = "shrink-0 select-none pr-3 text-right text-zinc-400";
  return (
    <div
      data-line={n}
      className={cn(
        "flex h-5",
        n === ctx.selected && "bg-yellow-100 dark:bg-yellow-900/40",
        r === ctx.activeRow && "outline outline-1 -outline-offset-1 outline-yellow-500",
        stderr && "bg-red-50/60 dark:bg-red-950/30",
      )}
    >
      {ctx.permalinks ? (
        <a
          href={`#L${n}`}
          aria-label={`Line ${n}`}
          style={ctx.gutter}
          className={cn(
            gutterClass,
            "hover:text-zinc-700 hover:underline focus-visible:outline-2 focus-visible:outline-blue-600 dark:hover:text-zinc-200",
          )}
        >
          {n}
        </a>
      ) : (
        <span style={ctx.gutter} className={gutterClass}>
          {n}
        </span>
      )}
      <span className="whitespace-pre pr-4">
        <LineContent text={model.text(r)} start={model.startStyle(r)} query={ctx.q} />
      </span>
    </div>
  );
}
