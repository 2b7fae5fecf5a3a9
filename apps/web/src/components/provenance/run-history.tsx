"use client";
import { EmptyState, LoadingBlock } from "@kiln/ui";
import { useQuery } from "@tanstack/react-query";
import { useTRPC } from "@/trpc/client.tsx";
import { QueryError } from "../query-error.tsx";

/** The run's ordered transition log (seed 002's account of what happened), oldest first. */
export function RunHistory({ org, runId }: { org: string; runId: string }) {
  const trpc = useTRPC();
  const q = useQuery({ ...trpc.provenance.runHistory.queryOptions({ org, runId }), refetchInterval: 10_000 });
  if (q.isPending) return <LoadingBlock label="Loading history" rows={4} />;
  if (q.isError) return <QueryError error={q.error} what="History" onRetry={() => void q.refetch()} />;
  if (q.data.length === 0) return <EmptyState title="No transitions">Nothing has happened to this run yet.</EmptyState>;
  return (
    <ol className="space-y-1 text-sm" data-testid="run-history">
      {q.data.map((e) => (
        <li key={e.seq} className="grid grid-cols-[6rem_5rem_1fr] gap-2">
          <time className="font-mono text-xs text-zinc-500 dark:text-zinc-400" dateTime={e.at} title={e.at}>
            {e.at.slice(11, 23)}
          </time>
          <span className="text-xs uppercase tracking-wide text-zinc-500 dark:text-zinc-400">{e.entity}</span>
          <span>
            <span className="font-mono text-xs">
              {e.from ?? "∅"} → {e.to}
            </span>{" "}
            <span className="text-zinc-600 dark:text-zinc-400">({e.reason})</span>
            {e.data && typeof e.data === "object" && "epoch" in e.data ? (
              <span className="ml-1 text-xs text-zinc-500">epoch {String((e.data as { epoch: unknown }).epoch)}</span>
            ) : null}
          </span>
        </li>
      ))}
    </ol>
  );
}
