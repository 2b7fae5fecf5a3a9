"use client";
import { type ReactNode, useState } from "react";
import { cn } from "../cn.ts";
import { LogLines } from "./log-lines.ts";
import { logRows } from "./log-rows.tsx";
import type { SourceState } from "./log-source.ts";
import { goneText, LogStatus } from "./log-status.tsx";
import { LogToolbar } from "./log-toolbar.tsx";
import { useLineHash } from "./use-line-hash.ts";
import { useLogScroll } from "./use-log-scroll.ts";
import { useLogFind } from "./use-log-search.ts";
import { useLogStream } from "./use-log-stream.ts";
import { computeWindow, scrollTopForRow } from "./virtual-window.ts";

const OVERSCAN = 30;

export interface LogViewerProps {
  /** GET /v1/jobs/{id}/logs/events (SSE). */
  eventsUrl: string;
  /** GET /v1/jobs/{id}/logs/raw (per stream, ?stream=stdout|stderr), offered as downloads. */
  rawUrl: string;
  /** Accessible name of the log region, e.g. the job's name. */
  label: string;
  /** Start in follow mode (the job is still running). */
  live: boolean;
  /** Read and write #L123 in the URL (one viewer per page). */
  permalinks?: boolean;
  height?: string;
  className?: string;
}

/**
 * A job's log: streamed over SSE, ANSI-coloured (safely: see ansi.ts), windowed so only the rows in
 * view are in the DOM, with line permalinks, follow mode, search and the raw download.
 */
export function LogViewer({
  eventsUrl,
  rawUrl,
  label,
  live,
  permalinks = true,
  height = "70vh",
  className,
}: LogViewerProps) {
  const [model] = useState(() => new LogLines());
  const { version, source } = useLogStream(eventsUrl, model);
  const { selected, follow, setFollow, pendingJump } = useLineHash(permalinks, live);
  const rowCount = model.length + model.pending().length;
  const scroll = useLogScroll({ model, rowCount, follow, setFollow, pendingJump, live: source.kind === "live" });
  const find = useLogFind(model, version, (row) => {
    setFollow(false);
    scroll.scrollTo(scrollTopForRow(row, scroll.geo));
  });
  const win = computeWindow({ ...scroll.geo, scrollTop: scroll.scrollTop, overscan: OVERSCAN });
  // The gutter grows with the largest line number so 7-digit logs do not overflow it.
  const gutter = { width: `${Math.max(4, String(rowCount).length) + 2}ch` };
  const rows = logRows(win.start, win.end, {
    model,
    q: find.query.toLowerCase(),
    gutter,
    selected,
    activeRow: find.matches[find.active] ?? -1,
    permalinks,
  });
  return (
    <div className={cn("overflow-hidden rounded-lg border border-zinc-200 dark:border-zinc-800", className)}>
      <div className="flex flex-wrap items-center gap-2 border-b border-zinc-200 bg-zinc-50 px-3 py-2 text-sm dark:border-zinc-800 dark:bg-zinc-900">
        <LogStatus state={source} lines={model.length} bytes={model.totalBytes} />
        <LogToolbar
          {...find}
          matches={find.matches.length}
          follow={follow}
          toggleFollow={() => setFollow((f) => !f)}
          rawUrl={rawUrl}
        />
      </div>
      <LogScroller scroll={scroll} label={label} height={height}>
        {rowCount === 0 ? (
          <p className="p-4 font-sans text-sm text-zinc-500 dark:text-zinc-400">{emptyText(source)}</p>
        ) : (
          <div style={{ height: win.totalHeight, position: "relative" }}>
            <div className="absolute left-0 min-w-full" style={{ top: win.offsetY }}>
              {rows}
            </div>
          </div>
        )}
      </LogScroller>
    </div>
  );
}

/** The focusable, scrolling log region (the rows inside are windowed by the caller). */
function LogScroller({
  scroll,
  label,
  height,
  children,
}: {
  scroll: ReturnType<typeof useLogScroll>;
  label: string;
  height: string;
  children: ReactNode;
}) {
  return (
    <div
      ref={scroll.scroller}
      tabIndex={0}
      role="region"
      aria-label={`Log output of ${label}`}
      onScroll={scroll.onScroll}
      className="relative overflow-auto bg-white font-mono text-xs leading-5 text-zinc-800 focus-visible:outline-2 focus-visible:-outline-offset-2 focus-visible:outline-blue-600 dark:bg-zinc-950 dark:text-zinc-200"
      style={{ height }}
    >
      {children}
    </div>
  );
}

/** What an empty log region says, by where the stream stands. */
function emptyText(source: SourceState): string {
  if (source.kind === "ended") return "This log is empty.";
  if (source.kind === "gone") return `This log was ${goneText(source)}; it can no longer be read.`;
  if (source.kind === "error") return "No log to show.";
  return "Waiting for output…";
}
