"use client";
import { Card, EmptyState, formatTimestamp, LoadingBlock } from "@kiln/ui";
import { useQuery } from "@tanstack/react-query";
import { useTRPC } from "@/trpc/client.tsx";
import { QueryError } from "../query-error.tsx";

/**
 * Deletion evidence (issue 21, ADR 0037): each destroyed data key of the org with its due instant,
 * when it was destroyed, and when its day's platform key followed. Admins and auditors (the caller
 * renders it only for them); refreshed every 30 s.
 */
export function DeletionEvidenceCard({ org }: { org: string }) {
  const trpc = useTRPC();
  const q = useQuery({ ...trpc.shredding.evidence.queryOptions({ org }), refetchInterval: 30_000 });
  const rows = q.data ?? [];
  return (
    <Card title="Deletion evidence (crypto-shredding)" id="deletion-evidence">
      {q.isPending ? (
        <LoadingBlock label="Loading deletion evidence" rows={3} />
      ) : q.isError ? (
        <QueryError error={q.error} what="Deletion evidence" onRetry={() => void q.refetch()} />
      ) : rows.length === 0 ? (
        <EmptyState title="No data key destroyed yet">
          Keys are destroyed at the end of their day plus the retention window; each destruction is listed here.
        </EmptyState>
      ) : (
        <table className="w-full text-left text-sm" data-testid="deletion-evidence-table">
          <thead className="text-xs text-zinc-500 dark:text-zinc-400">
            <tr>
              {["Data key", "Day · kind · class", "Due", "Destroyed", "Day key destroyed", "Objects"].map((h) => (
                <th key={h} scope="col" className="py-1.5 pr-4 font-medium">
                  {h}
                </th>
              ))}
            </tr>
          </thead>
          <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
            {rows.map((r) => (
              <tr key={r.key_id}>
                <td className="py-2 pr-4 font-mono text-xs">{r.key_id}</td>
                <td className="py-2 pr-4">
                  {r.day} · {r.kind} · {r.class}
                </td>
                <td className="py-2 pr-4 tabular-nums">
                  <time dateTime={r.due_at} suppressHydrationWarning>
                    {formatTimestamp(r.due_at)}
                  </time>
                </td>
                <td className="py-2 pr-4 tabular-nums">
                  <time dateTime={r.destroyed_at} suppressHydrationWarning>
                    {formatTimestamp(r.destroyed_at)}
                  </time>
                </td>
                <td className="py-2 pr-4 tabular-nums">
                  {r.platform_key_destroyed_at ? formatTimestamp(r.platform_key_destroyed_at) : "pending"}
                </td>
                <td className="py-2 tabular-nums">{r.objects}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Card>
  );
}
