"use client";
import { Card, DataTable, EmptyState, StatusGate } from "@kiln/ui";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { useTRPC } from "@/trpc/client.tsx";
import { QueryError } from "../query-error.tsx";
import { InterruptibleControl } from "./interruptible-control.tsx";
import { NewPoolForm } from "./new-pool-form.tsx";

/**
 * The org's own pools (runners.pools, admins; refreshed every 5 s like the rest of the page), the
 * "New pool" form and, per pool, its interruptible flag. Registration tokens name one of these.
 */
export function OrgPoolsCard({ org }: { org: string }) {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const q = useQuery({ ...trpc.runners.pools.queryOptions({ org }), refetchInterval: 5_000 });
  const [note, setNote] = useState<string | null>(null);
  const changed = async (message: string) => {
    await qc.invalidateQueries({ queryKey: trpc.runners.pools.queryKey() });
    setNote(message);
  };
  return (
    <Card title="Org pools" id="org-pools">
      <div aria-live="polite" className="text-sm">
        {note ? (
          <p className="mb-2 text-emerald-700 dark:text-emerald-400" data-testid="pools-note">
            {note}
          </p>
        ) : null}
      </div>
      <StatusGate
        pending={q.isPending}
        error={q.error}
        loadingLabel="Loading the org's pools"
        loadingRows={2}
        renderError={(e) => <QueryError error={e} what="The org's pools" onRetry={() => void q.refetch()} />}
      >
        {() => (
          <DataTable
            rows={q.data ?? []}
            rowKey={(p) => p.name}
            rowProps={(p) => ({ "data-pool": p.name })}
            testId="pools-table"
            empty={
              <EmptyState title="No org pools yet">
                An org pool holds the org&apos;s own hosts and takes the org&apos;s jobs alone. Create one below, then a
                registration token for it.
              </EmptyState>
            }
            columns={[
              { key: "pool", header: "Pool", className: "font-mono", cell: (p) => p.name },
              { key: "isolation", header: "Isolation", cell: (p) => p.minIsolation },
              { key: "untrusted", header: "Untrusted runs", cell: (p) => (p.admitsUntrusted ? "admitted" : "refused") },
              {
                key: "interruptible",
                header: "Interruptible",
                cell: (p) => (p.interruptible ? `yes, serves ${p.serves ?? "–"}` : "no"),
              },
              {
                key: "actions",
                header: "Actions",
                hideHeader: true,
                cell: (p) => (
                  <InterruptibleControl
                    org={org}
                    pool={p.name}
                    interruptible={p.interruptible}
                    serves={p.serves}
                    onChanged={changed}
                  />
                ),
              },
            ]}
          />
        )}
      </StatusGate>
      <NewPoolForm org={org} onCreated={(name) => changed(`Pool ${name} created.`)} />
    </Card>
  );
}
