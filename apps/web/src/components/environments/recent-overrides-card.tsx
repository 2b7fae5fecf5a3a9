"use client";
import { Card, DataTable, EmptyState, StatusGate } from "@kiln/ui";
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
      <StatusGate
        pending={q.isPending}
        error={q.error}
        loadingLabel="Loading overrides"
        loadingRows={2}
        renderError={(e) => <QueryError error={e} what="Overrides" onRetry={() => void q.refetch()} />}
      >
        {() => (
          <DataTable
            rows={q.data ?? []}
            rowKey={(o) => o.id}
            rowProps={(o) => ({ "data-override": o.id })}
            testId="recent-overrides"
            empty={<EmptyState title="No overrides">Break-glass overrides of promotion gates appear here.</EmptyState>}
            columns={[
              { key: "by", header: "By", cell: (o) => o.actorLogin ?? o.actor },
              { key: "reason", header: "Reason", cell: (o) => o.reason },
              { key: "gates", header: "Gates", className: "font-mono text-xs", cell: (o) => o.gates.join(", ") },
              { key: "expires", header: "Expires", cell: (o) => <RelativeTime iso={o.expiresAt} now={now} /> },
              {
                key: "state",
                header: "State",
                cell: (o) =>
                  `${o.state === "pending" && o.secondApproverRequired ? "waiting for a second admin" : o.state}${
                    o.secondApprover ? ` (second: ${o.secondApprover})` : ""
                  }`,
              },
            ]}
          />
        )}
      </StatusGate>
    </Card>
  );
}
