"use client";
import { Card, DataTable, EmptyState, StatusGate } from "@kiln/ui";
import { useQuery } from "@tanstack/react-query";
import { useTRPC } from "@/trpc/client.tsx";
import { QueryError } from "../query-error.tsx";

/**
 * The pools this org's jobs may be placed in (issue 15): each one's weakest admitted isolation class,
 * who may use it, and where untrusted runs (fork pull requests, non-members) may run. Read only:
 * operators set pools with `npm run kiln -- pool set`. Refreshed every 30 s, since a job waiting "for a
 * VM-isolated host" is often read next to this.
 */
export function PoolsCard({ org }: { org: string }) {
  const trpc = useTRPC();
  const q = useQuery({ ...trpc.tenants.pools.queryOptions({ org }), refetchInterval: 30_000 });
  return (
    <Card title="Pools and isolation" id="pools">
      <StatusGate
        pending={q.isPending}
        error={q.error}
        loadingLabel="Loading pools"
        loadingRows={2}
        renderError={(e) => <QueryError error={e} what="Pools" onRetry={() => void q.refetch()} />}
      >
        {() => (
          <DataTable
            rows={q.data ?? []}
            rowKey={(p) => p.name}
            rowProps={(p) => ({ "data-pool": p.name })}
            testId="pools-table"
            empty={
              <EmptyState title="No pools configured">
                Every pool is shared and needs microVM hosts until an operator configures it.
              </EmptyState>
            }
            columns={[
              { key: "pool", header: "Pool", className: "font-mono", cell: (p) => p.name },
              {
                key: "isolation",
                header: "Isolation",
                cell: (p) => (p.minIsolation === "microvm" ? "microVM hosts only" : "process hosts admitted"),
              },
              {
                key: "tenancy",
                header: "Tenancy",
                cell: (p) => (
                  <>
                    {p.tenancy === "org"
                      ? `owned by ${p.ownerOrg ?? "this org"}`
                      : p.development
                        ? "development (one operator)"
                        : "shared"}
                    {p.configured ? null : <span className="ml-1 text-xs text-zinc-500">(default)</span>}
                  </>
                ),
              },
              {
                key: "untrusted",
                header: "Untrusted runs",
                cell: (p) =>
                  !p.admitsUntrusted
                    ? "not admitted"
                    : p.untrustedOnProcess
                      ? "admitted, also on process hosts"
                      : "on microVM hosts only",
              },
            ]}
          />
        )}
      </StatusGate>
    </Card>
  );
}
