"use client";
import { useCallback, useEffect, useId, useLayoutEffect, useRef, useState } from "react";
import { Button, buttonClasses } from "../button.tsx";
import { cn } from "../cn.ts";
import { formatBytes } from "../format.ts";
import { DEFAULT_STYLE } from "./ansi.ts";
import { LineContent } from "./log-line.tsx";
import { LogLines } from "./log-lines.ts";
import { openLogSource, type SourceState } from "./log-source.ts";
import { goneText, LogStatus } from "./log-status.tsx";
import { MAX_MATCHES, useLogSearch } from "./use-log-search.ts";
import { computeWindow, scrollTopForRow } from "./virtual-window.ts";

const ROW = 20;
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

function withStream(url: string, stream: "stdout" | "stderr"): string {
  return `${url}${url.includes("?") ? "&" : "?"}stream=${stream}`;
}

function matchLabel(active: number, n: number): string {
  const count = `${n}${n >= MAX_MATCHES ? "+" : ""}`;
  return active >= 0 ? `${Math.min(active + 1, n)} / ${count}` : `${count} ${n === 1 ? "match" : "matches"}`;
}

/** "1.2 MiB" from a terminal event's dropped_bytes {stdout, stderr}, or "output" when unknown. */
function droppedText(detail: Record<string, unknown>): string {
  const d = detail.dropped_bytes as { stdout?: unknown; stderr?: unknown } | undefined;
  const n = (typeof d?.stdout === "number" ? d.stdout : 0) + (typeof d?.stderr === "number" ? d.stderr : 0);
  return n > 0 ? formatBytes(n) : "output";
}

function lineFromHash(): number | null {
  const m = /^#L(\d+)$/.exec(typeof window === "undefined" ? "" : window.location.hash);
  return m ? Number(m[1]) : null;
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
  const [version, setVersion] = useState(0);
  const [source, setSource] = useState<SourceState>({ kind: "connecting" });
  const [follow, setFollow] = useState(live && (!permalinks || lineFromHash() === null));
  const [selected, setSelected] = useState<number | null>(() => (permalinks ? lineFromHash() : null));
  const [scrollTop, setScrollTop] = useState(0);
  const [viewport, setViewport] = useState(600);
  const [query, setQuery] = useState("");
  // Index into matches of the current match; -1 until the user steps to one.
  const [active, setActive] = useState(-1);
  const searchId = useId();
  const scroller = useRef<HTMLDivElement>(null);
  const programmatic = useRef(false);
  const pendingJump = useRef<number | null>(selected);

  // Batch renders to one per animation frame however fast chunks arrive.
  useEffect(() => {
    let frame = 0;
    const schedule = () => {
      if (!frame)
        frame = requestAnimationFrame(() => {
          frame = 0;
          setVersion(model.version);
        });
    };
    const stop = openLogSource(eventsUrl, {
      chunk: (stream, offset, data) => {
        model.push(stream, offset, data);
        schedule();
      },
      attempt: (epoch) => {
        model.beginAttempt(epoch);
        schedule();
      },
      terminal: (how, detail) => {
        if (how === "truncated")
          model.mark(
            "truncated",
            `Log truncated here: ${droppedText(detail)} past the size limit ${droppedText(detail) === "output" ? "was" : "were"} not kept.`,
          );
        else if (how === "gapped")
          model.mark(
            "gap",
            "Part of this log is missing: the attempt ended before all of its output reached the platform.",
          );
        else model.flush();
        schedule();
      },
      reset: () => {
        model.reset();
        schedule();
      },
      state: setSource,
    });
    return () => {
      stop();
      cancelAnimationFrame(frame);
    };
  }, [eventsUrl, model]);

  useEffect(() => {
    const el = scroller.current;
    if (!el) return;
    const ro = new ResizeObserver(() => setViewport(el.clientHeight));
    ro.observe(el);
    return () => ro.disconnect();
  }, []);

  useEffect(() => {
    if (!permalinks) return;
    const onHash = () => {
      const n = lineFromHash();
      setSelected(n);
      pendingJump.current = n;
      if (n !== null) setFollow(false);
    };
    window.addEventListener("hashchange", onHash);
    return () => window.removeEventListener("hashchange", onHash);
  }, [permalinks]);

  const pending = model.pending();
  const rowCount = model.length + pending.length;
  const geo = { rowCount, rowHeight: ROW, viewportHeight: viewport };
  const scrollTo = useCallback((top: number) => {
    const el = scroller.current;
    if (!el) return;
    const before = el.scrollTop;
    el.scrollTop = top;
    // Only a scroll that actually moved fires a scroll event for onScroll to recognise as ours.
    if (el.scrollTop !== before) programmatic.current = true;
    setScrollTop(el.scrollTop);
  }, []);

  // Follow: stay pinned to the newest line. A permalink: jump once its line has arrived.
  useLayoutEffect(() => {
    if (pendingJump.current !== null) {
      const row = model.rowOf(pendingJump.current);
      if (row !== -1) {
        pendingJump.current = null;
        scrollTo(scrollTopForRow(row, geo));
      }
      return;
    }
    if (follow) scrollTo(scroller.current?.scrollHeight ?? 0);
  });

  const { matches, searching } = useLogSearch(model, version, query);
  const goToMatch = (i: number) => {
    if (matches.length === 0) return;
    const next = (i + matches.length) % matches.length;
    setActive(next);
    setFollow(false);
    scrollTo(scrollTopForRow(matches[next]!, geo));
  };

  const win = computeWindow({ ...geo, scrollTop, overscan: OVERSCAN });
  // The gutter grows with the largest line number so 7-digit logs do not overflow it.
  const gutter = { width: `${Math.max(4, String(rowCount).length) + 2}ch` };
  const q = query.toLowerCase();
  const activeRow = matches[active] ?? -1;
  const rows = [];
  for (let r = win.start; r < win.end; r++) {
    if (r >= model.length) {
      const p = pending[r - model.length];
      if (!p) continue;
      rows.push(
        <div key={`p${r}`} className="flex h-5 text-zinc-500 dark:text-zinc-400" data-pending="true">
          <span style={gutter} className="shrink-0 select-none pr-3 text-right text-zinc-400">
            …
          </span>
          <span className="whitespace-pre">
            <LineContent text={p.text} start={DEFAULT_STYLE} query={q} />
          </span>
        </div>,
      );
      continue;
    }
    const kind = model.kind(r);
    if (kind === "gap" || kind === "truncated" || kind === "attempt") {
      rows.push(
        <div
          key={r}
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
          {model.text(r)}
        </div>,
      );
      continue;
    }
    const n = model.lineNumber(r);
    const isSelected = n === selected;
    rows.push(
      <div
        key={r}
        data-line={n}
        className={cn(
          "flex h-5",
          isSelected && "bg-yellow-100 dark:bg-yellow-900/40",
          r === activeRow && "outline outline-1 -outline-offset-1 outline-yellow-500",
          kind === "stderr" && "bg-red-50/60 dark:bg-red-950/30",
        )}
      >
        {permalinks ? (
          <a
            href={`#L${n}`}
            aria-label={`Line ${n}`}
            style={gutter}
            className="shrink-0 select-none pr-3 text-right text-zinc-400 hover:text-zinc-700 hover:underline focus-visible:outline-2 focus-visible:outline-blue-600 dark:hover:text-zinc-200"
          >
            {n}
          </a>
        ) : (
          <span style={gutter} className="shrink-0 select-none pr-3 text-right text-zinc-400">
            {n}
          </span>
        )}
        <span className="whitespace-pre pr-4">
          <LineContent text={model.text(r)} start={model.startStyle(r)} query={q} />
        </span>
      </div>,
    );
  }

  return (
    <div className={cn("overflow-hidden rounded-lg border border-zinc-200 dark:border-zinc-800", className)}>
      <div className="flex flex-wrap items-center gap-2 border-b border-zinc-200 bg-zinc-50 px-3 py-2 text-sm dark:border-zinc-800 dark:bg-zinc-900">
        <LogStatus state={source} lines={model.length} bytes={model.totalBytes} />
        <div className="ml-auto flex flex-wrap items-center gap-2">
          <label className="sr-only" htmlFor={searchId}>
            Search the log
          </label>
          <input
            id={searchId}
            type="search"
            placeholder="Search log"
            value={query}
            onChange={(e) => {
              setQuery(e.target.value);
              setActive(-1);
            }}
            onKeyDown={(e) => {
              if (e.key === "Enter") goToMatch(active === -1 ? 0 : active + (e.shiftKey ? -1 : 1));
            }}
            className="h-7 w-48 rounded-md border border-zinc-300 bg-white px-2 text-xs focus-visible:outline-2 focus-visible:outline-blue-600 dark:border-zinc-700 dark:bg-zinc-950"
          />
          {query ? (
            <span className="text-xs tabular-nums text-zinc-500" aria-live="polite">
              {matches.length === 0 ? (searching ? "searching…" : "no matches") : matchLabel(active, matches.length)}
            </span>
          ) : null}
          <Button
            size="sm"
            variant="ghost"
            aria-label="Previous match"
            disabled={matches.length === 0}
            onClick={() => goToMatch(active <= 0 ? matches.length - 1 : active - 1)}
          >
            ↑
          </Button>
          <Button
            size="sm"
            variant="ghost"
            aria-label="Next match"
            disabled={matches.length === 0}
            onClick={() => goToMatch(active + 1)}
          >
            ↓
          </Button>
          <Button
            size="sm"
            aria-pressed={follow}
            onClick={() => setFollow((f) => !f)}
            variant={follow ? "primary" : "secondary"}
          >
            Follow
          </Button>
          <span className="flex items-center gap-1 text-xs text-zinc-500 dark:text-zinc-400">
            Raw:
            <a href={withStream(rawUrl, "stdout")} className={buttonClasses("secondary", "sm")} download>
              stdout
            </a>
            <a href={withStream(rawUrl, "stderr")} className={buttonClasses("secondary", "sm")} download>
              stderr
            </a>
          </span>
        </div>
      </div>
      <div
        ref={scroller}
        tabIndex={0}
        role="region"
        aria-label={`Log output of ${label}`}
        onScroll={(e) => {
          const el = e.currentTarget;
          setScrollTop(el.scrollTop);
          if (programmatic.current) {
            programmatic.current = false;
            return;
          }
          // The user scrolled: leave follow mode unless they are at the bottom.
          const atBottom = el.scrollHeight - el.scrollTop - el.clientHeight < ROW * 2;
          if (!atBottom && follow) setFollow(false);
          if (atBottom && !follow && source.kind === "live") setFollow(true);
        }}
        className="relative overflow-auto bg-white font-mono text-xs leading-5 text-zinc-800 focus-visible:outline-2 focus-visible:-outline-offset-2 focus-visible:outline-blue-600 dark:bg-zinc-950 dark:text-zinc-200"
        style={{ height }}
      >
        {rowCount === 0 ? (
          <p className="p-4 font-sans text-sm text-zinc-500 dark:text-zinc-400">
            {source.kind === "ended"
              ? "This log is empty."
              : source.kind === "gone"
                ? `This log was ${goneText(source)}; it can no longer be read.`
                : source.kind === "error"
                  ? "No log to show."
                  : "Waiting for output…"}
          </p>
        ) : (
          <div style={{ height: win.totalHeight, position: "relative" }}>
            <div className="absolute left-0 min-w-full" style={{ top: win.offsetY }}>
              {rows}
            </div>
          </div>
        )}
      </div>
    </div>
  );
}
