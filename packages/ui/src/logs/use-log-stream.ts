"use client";
import { useEffect, useState } from "react";
import { formatBytes } from "../format.ts";
import type { LogLines } from "./log-lines.ts";
import { type LogSourceHandlers, openLogSource, type SourceState } from "./log-source.ts";

/** "1.2 MiB" from a terminal event's dropped_bytes {stdout, stderr}, or "output" when unknown. */
function droppedText(detail: Record<string, unknown>): string {
  const d = detail.dropped_bytes as { stdout?: unknown; stderr?: unknown } | undefined;
  const n = (typeof d?.stdout === "number" ? d.stdout : 0) + (typeof d?.stderr === "number" ? d.stderr : 0);
  return n > 0 ? formatBytes(n) : "output";
}

/**
 * Feeds the SSE stream into `model` and re-renders once per animation frame however fast chunks
 * arrive. Returns the model's version at the last render and the connection state.
 */
export function useLogStream(eventsUrl: string, model: LogLines): { version: number; source: SourceState } {
  const [version, setVersion] = useState(0);
  const [source, setSource] = useState<SourceState>({ kind: "connecting" });
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
        markTerminal(model, how, detail);
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
  return { version, source };
}

type Terminal = Parameters<LogSourceHandlers["terminal"]>[0];

/** One attempt's log ended: a truncation or a gap is marked in the log, else the open line is kept. */
function markTerminal(model: LogLines, how: Terminal, detail: Record<string, unknown>) {
  if (how === "truncated")
    model.mark(
      "truncated",
      `Log truncated here: ${droppedText(detail)} past the size limit ${droppedText(detail) === "output" ? "was" : "were"} not kept.`,
    );
  else if (how === "gapped")
    model.mark("gap", "Part of this log is missing: the attempt ended before all of its output reached the platform.");
  else model.flush();
}
