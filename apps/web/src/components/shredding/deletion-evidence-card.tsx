"use client";
import { Card, DataTable, EmptyState, formatTimestamp, StatusGate } from "@kiln/ui";
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
  return (
    <Card title="Deletion evidence (crypto-shredding)" id="deletion-evidence">
      <StatusGate
        pending={q.isPending}
        error={q.error}
        loadingLabel="Loading deletion evidence"
        renderError={(e) => <QueryError error={e} what="Deletion evidence" onRetry={() => void q.refetch()} />}
      >
        {() => (
          <DataTable
            rows={q.data ?? []}
            rowKey={(r) => r.key_id}
            testId="deletion-evidence-table"
            empty={
              <EmptyState title="No data key destroyed yet">
                Keys are destroyed at the end of their day plus the retention window; each destruction is listed here.
              </EmptyState>
            }
            columns={[
              { key: "key", header: "Data key", className: "font-mono text-xs", cell: (r) => r.key_id },
              { key: "day", header: "Day · kind · class", cell: (r) => `${r.day} · ${r.kind} · ${r.class}` },
              { key: "due", header: "Due", className: "tabular-nums", cell: (r) => <Time iso={r.due_at} /> },
              {
                key: "destroyed",
                header: "Destroyed",
                className: "tabular-nums",
                cell: (r) => <Time iso={r.destroyed_at} />,
              },
              {
                key: "day-key",
                header: "Day key destroyed",
                className: "tabular-nums",
                cell: (r) => (r.platform_key_destroyed_at ? formatTimestamp(r.platform_key_destroyed_at) : "pending"),
              },
              { key: "objects", header: "Objects", className: "tabular-nums", cell: (r) => r.objects },
            ]}
          />
        )}
      </StatusGate>
    </Card>
  );
}

/** Server and browser may format dates in different locales: the browser's text wins. */
function Time({ iso }: { iso: string }) {
  return (
    <time dateTime={iso} suppressHydrationWarning>
      {formatTimestamp(iso)}
    </time>
  );
}
