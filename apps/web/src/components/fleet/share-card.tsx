"use client";
import { Card, DataTable, EmptyState, StatusGate } from "@kiln/ui";
import { useQuery } from "@tanstack/react-query";
import { useTRPC } from "@/trpc/client.tsx";
import { QueryError } from "../query-error.tsx";

/** Seed 002's figure per pool: background job-minutes on interruptible capacity, target 55%. */
export function ShareCard({ org, all }: { org: string; all: boolean }) {
  const trpc = useTRPC();
  const q = useQuery({ ...trpc.fleet.share.queryOptions({ org, all, windowHours: 24 }), refetchInterval: 10_000 });
  return (
    <Card title="Interruptible capacity, last 24 hours" id="interruptible-share">
      <StatusGate
        pending={q.isPending}
        error={q.error}
        loadingLabel="Loading the interruptible share"
        loadingRows={2}
        renderError={(e) => <QueryError error={e} what="The interruptible share" onRetry={() => void q.refetch()} />}
      >
        {() => (
          <DataTable
            rows={q.data ?? []}
            rowKey={(s) => s.pool}
            rowProps={(s) => ({ "data-pool": s.pool })}
            testId="share-table"
            empty={
              <EmptyState title="No background work yet">
                Background-tier jobs (scheduled runs, nightly work) are what interruptible pools take.
              </EmptyState>
            }
            columns={[
              { key: "pool", header: "Pool", className: "font-mono", cell: (s) => s.pool },
              {
                key: "share",
                header: "On interruptible",
                cell: (s) => (
                  <>
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
                  </>
                ),
              },
              { key: "minutes", header: "Background minutes", cell: (s) => s.eligibleMinutes.toFixed(1) },
              { key: "reclaims", header: "Reclaims", cell: (s) => s.reclaims },
              {
                key: "served-by",
                header: "Served by",
                className: "font-mono",
                cell: (s) => s.interruptiblePools.join(", ") || "–",
              },
            ]}
          />
        )}
      </StatusGate>
    </Card>
  );
}
