"use client";
import { LoadingBlock, LogViewer, StatusBadge } from "@kiln/ui";
import { cn } from "@kiln/ui";
import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useState } from "react";
import { useTRPC } from "@/trpc/client.tsx";
import { QueryError } from "../query-error.tsx";

/** One job's log, full height, with its status polled until it finishes. */
export function JobLogView({ org, runId, jobId }: { org: string; runId: string; jobId: string }) {
  const trpc = useTRPC();
  const q = useQuery({
    ...trpc.jobs.get.queryOptions({ org, runId, jobId }),
    refetchInterval: (query) => (query.state.data?.status === "completed" ? false : 2_000),
  });
  // null: follow the newest attempt (and any retry that starts while watching); N: pin attempt N.
  const [pinned, setPinned] = useState<number | null>(null);
  if (q.isPending) return <LoadingBlock label="Loading job" rows={4} />;
  if (q.isError) return <QueryError error={q.error} what="Job" onRetry={() => void q.refetch()} />;
  const j = q.data;
  return (
    <div className="space-y-4">
      <div className="space-y-1.5">
        <nav aria-label="Breadcrumb" className="text-sm text-zinc-500 dark:text-zinc-400">
          <Link href={`/orgs/${org}/runs`} className="hover:underline">
            Runs
          </Link>{" "}
          /{" "}
          <Link href={`/orgs/${org}/runs/${runId}`} className="font-mono hover:underline">
            {runId.slice(0, 8)}
          </Link>{" "}
          / {j.name}
        </nav>
        <h1 className="flex flex-wrap items-center gap-3 text-xl font-semibold tracking-tight">
          {j.name}
          <StatusBadge status={j.status} outcomeClass={j.outcome_class} className="text-sm" />
          {j.epoch > 1 ? (
            <span className="text-sm font-normal text-amber-700 dark:text-amber-400">epoch {j.epoch}</span>
          ) : null}
        </h1>
        {j.cause && j.outcome !== "success" ? (
          <p className="text-sm">
            <code className="text-xs">{j.cause}</code>
            {j.cause_message ? ` — ${j.cause_message}` : ""}
          </p>
        ) : null}
      </div>
      {j.epoch > 1 ? (
        <div role="group" aria-label="Attempt" className="flex flex-wrap items-center gap-1 text-sm">
          <span className="mr-1 text-zinc-500 dark:text-zinc-400">Attempt:</span>
          {[null, ...Array.from({ length: j.epoch }, (_, i) => i + 1)].map((e) => (
            <button
              key={e ?? "latest"}
              type="button"
              aria-pressed={pinned === e}
              onClick={() => setPinned(e)}
              className={cn(
                "rounded-md px-2.5 py-1 focus-visible:outline-2 focus-visible:outline-blue-600",
                pinned === e
                  ? "bg-zinc-900 text-white dark:bg-zinc-100 dark:text-zinc-900"
                  : "text-zinc-700 hover:bg-zinc-100 dark:text-zinc-300 dark:hover:bg-zinc-800",
              )}
            >
              {e === null ? "latest" : e}
            </button>
          ))}
        </div>
      ) : null}
      <LogViewer
        key={`${jobId}:${pinned ?? "latest"}`}
        eventsUrl={`/v1/jobs/${jobId}/logs/events${pinned ? `?attempt=${pinned}` : ""}`}
        rawUrl={`/v1/jobs/${jobId}/logs/raw${pinned ? `?attempt=${pinned}` : ""}`}
        label={j.name}
        live={j.status !== "completed"}
      />
    </div>
  );
}
