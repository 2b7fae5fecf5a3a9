"use client";
import { Card, EmptyState, LoadingBlock } from "@kiln/ui";
import { useQuery } from "@tanstack/react-query";
import { useTRPC } from "@/trpc/client.tsx";
import { QueryError } from "../query-error.tsx";

/** Seed 002's figure per pool: background job-minutes on interruptible capacity, target 55%. */
export function ShareCard({ org, all }: { org: string; all: boolean }) {
  const trpc = useTRPC();
  const q = useQuery({ ...trpc.fleet.share.queryOptions({ org, all, windowHours: 24 }), refetchInterval: 10_000 });
  return (
    <Card title="Interruptible capacity, last 24 hours" id="interruptible-share">
      {q.isPending ? (
        <LoadingBlock label="Loading the interruptible share" rows={2} />
      ) : q.isError ? (
        <QueryError error={q.error} what="The interruptible share" onRetry={() => void q.refetch()} />
      ) : q.data.length === 0 ? (
        <EmptyState title="No background work yet">
          Background-tier jobs (scheduled runs, nightly work) are what interruptible pools take.
        </EmptyState>
      ) : (
        <table className="w-full text-left text-sm" data-testid="share-table">
          <thead className="text-xs text-zinc-500 dark:text-zinc-400">
            <tr>
              <th scope="col" className="py-1.5 font-medium">
                Pool
              </th>
              <th scope="col" className="py-1.5 font-medium">
                On interruptible
              </th>
              <th scope="col" className="py-1.5 font-medium">
                Background minutes
              </th>
              <th scope="col" className="py-1.5 font-medium">
                Reclaims
              </th>
              <th scope="col" className="py-1.5 font-medium">
                Served by
              </th>
            </tr>
          </thead>
          <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
            {q.data.map((s) => (
              <tr key={s.pool} data-pool={s.pool}>
                <td className="py-2 font-mono">{s.pool}</td>
                <td className="py-2" data-field="share">
                  {s.share === null ? "–" : `${(s.share * 100).toFixed(1)}%`}{" "}
                  <span
                    className={
                      s.meetsTarget === false
                        ? "text-amber-700 dark:text-amber-400"
                        : "text-zinc-500 dark:text-zinc-400"
                    }
                  >
                    (target {Math.round(s.target * 100)}%{s.meetsTarget === false ? ", missed" : ""})
                  </span>
                </td>
                <td className="py-2">{s.eligibleMinutes.toFixed(1)}</td>
                <td className="py-2" data-field="reclaims">
                  {s.reclaims}
                </td>
                <td className="py-2 font-mono">{s.interruptiblePools.join(", ") || "–"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Card>
  );
}
