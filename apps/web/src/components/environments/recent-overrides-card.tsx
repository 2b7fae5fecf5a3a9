"use client";
import { Card, EmptyState, LoadingBlock } from "@kiln/ui";
import { useQuery } from "@tanstack/react-query";
import { useTRPC } from "@/trpc/client.tsx";
import { QueryError } from "../query-error.tsx";
import { RelativeTime } from "../time.tsx";

/** The org home's watched signal: break-glass overrides, newest first (refreshed every 10 s). */
export function RecentOverridesCard({ org, now }: { org: string; now: number }) {
  const trpc = useTRPC();
  const q = useQuery({ ...trpc.promotions.overrides.queryOptions({ org }), refetchInterval: 10_000 });
  return (
    <Card title="Recent overrides" id="recent-overrides">
      {q.isPending ? (
        <LoadingBlock label="Loading overrides" rows={2} />
      ) : q.isError ? (
        <QueryError error={q.error} what="Overrides" onRetry={() => void q.refetch()} />
      ) : q.data.length === 0 ? (
        <EmptyState title="No overrides">Break-glass overrides of promotion gates appear here.</EmptyState>
      ) : (
        <table className="w-full text-left text-sm" data-testid="recent-overrides">
          <thead className="text-xs uppercase tracking-wide text-zinc-500 dark:text-zinc-400">
            <tr>
              <th scope="col" className="py-2 pr-4 font-medium">
                By
              </th>
              <th scope="col" className="py-2 pr-4 font-medium">
                Reason
              </th>
              <th scope="col" className="py-2 pr-4 font-medium">
                Gates
              </th>
              <th scope="col" className="py-2 pr-4 font-medium">
                Expires
              </th>
              <th scope="col" className="py-2 font-medium">
                State
              </th>
            </tr>
          </thead>
          <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
            {q.data.map((o) => (
              <tr key={o.id} data-override={o.id}>
                <td className="py-2 pr-4">{o.actorLogin ?? o.actor}</td>
                <td className="py-2 pr-4">{o.reason}</td>
                <td className="py-2 pr-4 font-mono text-xs">{o.gates.join(", ")}</td>
                <td className="py-2 pr-4">
                  <RelativeTime iso={o.expiresAt} now={now} />
                </td>
                <td className="py-2">
                  {o.state === "pending" && o.secondApproverRequired ? "waiting for a second admin" : o.state}
                  {o.secondApprover ? ` (second: ${o.secondApprover})` : ""}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Card>
  );
}
