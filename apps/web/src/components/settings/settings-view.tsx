"use client";
import { LoadingBlock } from "@kiln/ui";
import Link from "next/link";
import { useQuery } from "@tanstack/react-query";
import { useTRPC } from "@/trpc/client.tsx";
import { useOrg } from "../org-context.tsx";
import { QueryError } from "../query-error.tsx";
import { useNow } from "../time.tsx";
import { AdminLinks } from "../admin/admin-page.tsx";
import { CacheConflicts } from "./cache-conflicts.tsx";
import { CapacityCard } from "./capacity/capacity-card.tsx";
import { EgressCard } from "./egress-card.tsx";
import { IdentityCard } from "./identity-card.tsx";
import { PoolsCard } from "./pools-card.tsx";
import { RecentChanges } from "./recent-changes.tsx";

/**
 * Org settings: capacity per pool, the egress allow-list, pools, workload identity and the audit trail. Everyone in the org
 * reads them; only admins see the forms (the server refuses other roles regardless).
 */
export function SettingsView({ org }: { org: string }) {
  const trpc = useTRPC();
  const { role } = useOrg();
  const q = useQuery(trpc.tenants.settings.queryOptions({ org }));
  const now = useNow(30_000);
  if (q.isPending) return <LoadingBlock label="Loading settings" rows={6} />;
  if (q.isError) return <QueryError error={q.error} what="Settings" onRetry={() => void q.refetch()} />;
  const admin = role === "admin";
  return (
    <div className="space-y-6">
      <div>
        <h1 className="text-xl font-semibold tracking-tight">Settings</h1>
        {admin ? null : (
          <p className="mt-1 text-sm text-zinc-600 dark:text-zinc-400" data-testid="read-only-note">
            Read only: you are a {role} of {org}; only admins can change these settings.
          </p>
        )}
        {admin ? (
          <AdminLinks org={org} />
        ) : role === "auditor" ? (
          <p className="mt-1 text-sm">
            <Link href={`/orgs/${org}/audit`} className="underline-offset-2 hover:underline">
              Audit trail
            </Link>
          </p>
        ) : null}
      </div>
      <CapacityCard org={org} rows={q.data.entitlements} admin={admin} />
      <EgressCard org={org} rules={q.data.egress} admin={admin} now={now} />
      <PoolsCard org={org} />
      <IdentityCard org={org} now={now} />
      <RecentChanges changes={q.data.changes} now={now} />
      {admin ? <CacheConflicts conflicts={q.data.cache_conflicts} now={now} /> : null}
    </div>
  );
}
