"use client";
import { Card, EmptyState, LoadingBlock } from "@kiln/ui";
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
      {q.isPending ? (
        <LoadingBlock label="Loading pools" rows={2} />
      ) : q.isError ? (
        <QueryError error={q.error} what="Pools" onRetry={() => void q.refetch()} />
      ) : q.data.length === 0 ? (
        <EmptyState title="No pools configured">
          Every pool is shared and needs microVM hosts until an operator configures it.
        </EmptyState>
      ) : (
        <table className="w-full text-left text-sm" data-testid="pools-table">
          <thead className="text-xs text-zinc-500 dark:text-zinc-400">
            <tr>
              <th scope="col" className="py-1 pr-3 font-medium">
                Pool
              </th>
              <th scope="col" className="py-1 pr-3 font-medium">
                Isolation
              </th>
              <th scope="col" className="py-1 pr-3 font-medium">
                Tenancy
              </th>
              <th scope="col" className="py-1 font-medium">
                Untrusted runs
              </th>
            </tr>
          </thead>
          <tbody className="divide-y divide-zinc-200 dark:divide-zinc-800">
            {q.data.map((p) => (
              <tr key={p.name} data-pool={p.name}>
                <td className="py-1.5 pr-3 font-mono">{p.name}</td>
                <td className="py-1.5 pr-3">
                  {p.minIsolation === "microvm" ? "microVM hosts only" : "process hosts admitted"}
                </td>
                <td className="py-1.5 pr-3">
                  {p.tenancy === "org"
                    ? `owned by ${p.ownerOrg ?? "this org"}`
                    : p.development
                      ? "development (one operator)"
                      : "shared"}
                  {p.configured ? null : <span className="ml-1 text-xs text-zinc-500">(default)</span>}
                </td>
                <td className="py-1.5">
                  {!p.admitsUntrusted
                    ? "not admitted"
                    : p.untrustedOnProcess
                      ? "admitted, also on process hosts"
                      : "on microVM hosts only"}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Card>
  );
}
