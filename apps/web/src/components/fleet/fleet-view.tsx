"use client";
import { Card, EmptyState } from "@kiln/ui";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { useTRPC } from "@/trpc/client.tsx";
import { AdminPage } from "../admin/admin-page.tsx";
import { useNow } from "../time.tsx";
import { FleetTable, type FleetAction } from "./fleet-table.tsx";
import { OrgPoolsCard } from "./org-pools-card.tsx";
import { RegistrationTokenCard } from "./registration-token-card.tsx";
import { ShareCard } from "./share-card.tsx";

/**
 * The fleet view (issue 22, docs/adr/0035): every host of the org's pools (an operator may switch to
 * every host), live (refreshed every 3 s), with drain, quarantine, revoke and, on interruptible
 * capacity, reclaim. Reclaims are counted apart from other platform failures. Below: the org's own
 * pools, their interruptible flag, and registration tokens for new hosts.
 */
export function FleetView({ org }: { org: string }) {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const now = useNow(5_000);
  const rights = useQuery(trpc.tenants.capacityRights.queryOptions());
  const [all, setAll] = useState(false);
  const q = useQuery({ ...trpc.fleet.list.queryOptions({ org, all }), refetchInterval: 3_000 });
  const [note, setNote] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const refresh = () => qc.invalidateQueries({ queryKey: trpc.fleet.list.queryKey() });
  const done = async (message: string) => {
    await refresh();
    setNote(message);
    document.querySelector<HTMLElement>("#fleet-heading")?.focus();
  };
  const act = useMutation(
    trpc.fleet.act.mutationOptions({
      onMutate: () => {
        setNote(null);
        setError(null);
      },
      onSuccess: (r, v) => done(`${r.name}: ${v.action} done, now ${r.state}.`),
      onError: (e) => setError(`Could not change the host: ${e.message}`),
    }),
  );
  const reclaim = useMutation(
    trpc.fleet.reclaim.mutationOptions({
      onMutate: () => {
        setNote(null);
        setError(null);
      },
      onSuccess: (r) => done(`Reclaim notice sent to ${r.name}: its jobs go to on-demand capacity.`),
      onError: (e) => setError(`Could not reclaim the host: ${e.message}`),
    }),
  );
  const onAction = (a: FleetAction) => {
    if (a.kind === "reclaim") reclaim.mutate({ org, all, pool: a.pool, runnerId: a.runnerId });
    else act.mutate({ org, all, runnerId: a.runnerId, action: a.kind, ...(a.reason ? { reason: a.reason } : {}) });
  };
  return (
    <AdminPage org={org} title="Fleet" what="Hosts" query={q}>
      {() => {
        const hosts = q.data ?? [];
        return (
          <>
            <div aria-live="polite" className="text-sm">
              {note ? (
                <p className="text-emerald-700 dark:text-emerald-400" data-testid="fleet-note">
                  {note}
                </p>
              ) : null}
              {error ? (
                <p role="alert" className="text-red-700 dark:text-red-400" data-testid="fleet-error">
                  {error}
                </p>
              ) : null}
            </div>
            <Card
              title={
                <span id="fleet-heading" tabIndex={-1}>
                  {all ? "Every host" : `Hosts of ${org}`}
                </span>
              }
              actions={
                rights.data?.platformAdmin ? (
                  <label className="flex items-center gap-2 text-sm">
                    <input type="checkbox" checked={all} onChange={(e) => setAll(e.target.checked)} />
                    All hosts (operator)
                  </label>
                ) : null
              }
              id="fleet"
            >
              {hosts.length === 0 ? (
                <EmptyState title="No hosts yet">
                  Create a registration token below and start an agent with{" "}
                  <code className="font-mono">npm run agent -- register</code>; it shows up here within seconds.
                </EmptyState>
              ) : (
                <FleetTable hosts={hosts} now={now} busy={act.isPending || reclaim.isPending} onAction={onAction} />
              )}
            </Card>
            <ShareCard org={org} all={all} />
            <OrgPoolsCard org={org} />
            <RegistrationTokenCard org={org} />
          </>
        );
      }}
    </AdminPage>
  );
}
