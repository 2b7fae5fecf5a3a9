"use client";
import { Card, EmptyState, LoadingBlock } from "@kiln/ui";
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
      {q.isPending ? (
        <LoadingBlock label="Loading the org's pools" rows={2} />
      ) : q.isError ? (
        <QueryError error={q.error} what="The org's pools" onRetry={() => void q.refetch()} />
      ) : q.data.length === 0 ? (
        <EmptyState title="No org pools yet">
          An org pool holds the org&apos;s own hosts and takes the org&apos;s jobs alone. Create one below, then a
          registration token for it.
        </EmptyState>
      ) : (
        <table className="w-full text-left text-sm" data-testid="pools-table">
          <thead className="text-xs text-zinc-500 dark:text-zinc-400">
            <tr>
              <th scope="col" className="py-1.5 font-medium">
                Pool
              </th>
              <th scope="col" className="py-1.5 font-medium">
                Isolation
              </th>
              <th scope="col" className="py-1.5 font-medium">
                Untrusted runs
              </th>
              <th scope="col" className="py-1.5 font-medium">
                Interruptible
              </th>
              <th scope="col" className="py-1.5 font-medium">
                <span className="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
            {q.data.map((p) => (
              <tr key={p.name} data-pool={p.name}>
                <td className="py-2 font-mono">{p.name}</td>
                <td className="py-2" data-field="isolation">
                  {p.minIsolation}
                </td>
                <td className="py-2">{p.admitsUntrusted ? "admitted" : "refused"}</td>
                <td className="py-2" data-field="interruptible">
                  {p.interruptible ? `yes, serves ${p.serves ?? "–"}` : "no"}
                </td>
                <td className="py-2">
                  <InterruptibleControl
                    org={org}
                    pool={p.name}
                    interruptible={p.interruptible}
                    serves={p.serves}
                    onChanged={changed}
                  />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <NewPoolForm org={org} onCreated={(name) => changed(`Pool ${name} created.`)} />
    </Card>
  );
}
