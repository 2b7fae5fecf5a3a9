"use client";
import { useEffect, useMemo, useState } from "react";
import { cn } from "../cn.ts";
import { firstErrorRegion } from "./first-error.ts";
import { LineContent } from "./log-line.tsx";
import { LogLines } from "./log-lines.ts";
import { openLogSource, type SourceState } from "./log-source.ts";
import { goneText } from "./log-status.tsx";

export interface LogExcerptProps {
  /** GET /v1/jobs/{id}/logs/events (SSE) of the failed job. */
  eventsUrl: string;
  /** Where line n is in the full log view: the job page's #L<n> permalink. */
  lineHref: (line: number) => string;
  label: string;
}

/**
 * The log region around a failed job's first error (issue 20): streamed into the same LogLines
 * model the log viewer numbers its lines with, so each line number here links to that very line of
 * the job's log view. Computed once the log has ended (a failed job's log always does).
 */
export function LogExcerpt({ eventsUrl, lineHref, label }: LogExcerptProps) {
  const [model] = useState(() => new LogLines());
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
      terminal: (how) => {
        if (how === "gapped") model.mark("gap", "Part of this log is missing.");
        else if (how === "truncated") model.mark("truncated", "Log truncated here.");
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

  const ended = source.kind === "ended";
  // `version` is the model's change counter: the region is recomputed when lines arrive after the end.
  const region = useMemo(() => (ended ? firstErrorRegion(model.numberedLines()) : null), [ended, version, model]);

  if (source.kind === "error") {
    return (
      <p role="alert" className="text-sm text-red-700 dark:text-red-400">
        The log could not be loaded: {source.message}
      </p>
    );
  }
  if (source.kind === "gone") {
    return <p className="text-sm text-zinc-600 dark:text-zinc-400">This log was {goneText(source)}.</p>;
  }
  if (!ended) {
    return (
      <p role="status" className="text-sm text-zinc-500 dark:text-zinc-400">
        Loading the log…
      </p>
    );
  }
  if (!region) return <p className="text-sm text-zinc-500 dark:text-zinc-400">The job wrote no output.</p>;
  const numbers = Array.from({ length: region.to - region.from + 1 }, (_, i) => region.from + i);
  return (
    <figure className="space-y-1.5" data-testid="first-error-excerpt">
      <figcaption className="text-xs text-zinc-600 dark:text-zinc-400">
        {region.match !== null ? (
          <>
            First error at{" "}
            <a className="text-blue-700 hover:underline dark:text-blue-400" href={lineHref(region.match)}>
              line {region.match}
            </a>
          </>
        ) : (
          `No line looks like an error: the last ${numbers.length} lines`
        )}
      </figcaption>
      <ol
        aria-label={label}
        className="overflow-x-auto rounded-md border border-zinc-200 bg-white py-1 font-mono text-xs leading-5 dark:border-zinc-800 dark:bg-zinc-950"
      >
        {numbers.map((n) => {
          const row = model.rowOf(n);
          return (
            <li
              key={n}
              data-line={n}
              className={cn(
                "flex whitespace-pre px-2",
                n === region.match && "bg-red-50 font-semibold dark:bg-red-950/50",
                model.kind(row) === "stderr" && "text-red-800 dark:text-red-300",
              )}
            >
              <a
                href={lineHref(n)}
                className="w-12 shrink-0 select-none pr-3 text-right text-zinc-400 hover:text-zinc-700 hover:underline focus-visible:outline-2 focus-visible:outline-blue-600"
              >
                {n}
              </a>
              <span>
                <LineContent text={model.text(row)} start={model.startStyle(row)} query="" />
              </span>
            </li>
          );
        })}
      </ol>
    </figure>
  );
}
