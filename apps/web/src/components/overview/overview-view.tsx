"use client";
import { Card, EmptyState, formatDuration, formatPercent, LoadingBlock, Stat, StatusBadge, shortRef } from "@kiln/ui";
import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useTRPC } from "@/trpc/client.tsx";
import { RecentOverridesCard } from "../environments/recent-overrides-card.tsx";
import { QuarantineAlert } from "../provenance/quarantine-alert.tsx";
import { ShredLeakAlert } from "../shredding/shred-leak-alert.tsx";
import { QueryError } from "../query-error.tsx";
import { RunsTable } from "../runs/runs-table.tsx";
import { Elapsed, useNow } from "../time.tsx";
import type { OverviewData } from "../types.ts";

/** Org home. Polls every 5 s: it is the page people leave open. */
export function OverviewView({ org }: { org: string }) {
  const trpc = useTRPC();
  const q = useQuery({ ...trpc.runs.overview.queryOptions({ org }), refetchInterval: 5_000 });
  const now = useNow(1000);
  if (q.isPending) return <LoadingBlock label="Loading overview" rows={6} />;
  if (q.isError) return <QueryError error={q.error} what="Overview" onRetry={() => void q.refetch()} />;
  const d = q.data;
  return (
    <div className="space-y-6">
      <h1 className="text-xl font-semibold tracking-tight">{org}</h1>
      <QuarantineAlert org={org} />
      <ShredLeakAlert org={org} />
      <Stats d={d} />
      <Card title={`Running and queued jobs (${d.running_count + d.queued_count})`} id="active-jobs">
        {d.active_jobs.length === 0 ? (
          <EmptyState title="Nothing running or queued">Jobs appear here as soon as a run is admitted.</EmptyState>
        ) : (
          <div className="overflow-x-auto">
            <table className="w-full text-left text-sm">
              <thead className="text-xs uppercase tracking-wide text-zinc-500 dark:text-zinc-400">
                <tr>
                  <th scope="col" className="py-2 pr-4 font-medium">
                    Job
                  </th>
                  <th scope="col" className="py-2 pr-4 font-medium">
                    Status
                  </th>
                  <th scope="col" className="py-2 pr-4 font-medium">
                    Repository
                  </th>
                  <th scope="col" className="py-2 pr-4 font-medium">
                    Branch
                  </th>
                  <th scope="col" className="py-2 pr-4 font-medium">
                    Host
                  </th>
                  <th scope="col" className="py-2 font-medium">
                    For
                  </th>
                </tr>
              </thead>
              <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
                {d.active_jobs.map((j) => (
                  <tr key={j.id}>
                    <td className="py-2 pr-4">
                      <Link
                        className="font-medium hover:underline focus-visible:outline-2 focus-visible:outline-blue-600"
                        href={`/orgs/${org}/runs/${j.run_id}/jobs/${j.id}`}
                      >
                        {j.name}
                      </Link>
                      {j.epoch > 1 ? (
                        <span className="ml-2 text-xs text-amber-700 dark:text-amber-400">epoch {j.epoch}</span>
                      ) : null}
                    </td>
                    <td className="py-2 pr-4">
                      <StatusBadge status={j.status} outcomeClass={null} />
                    </td>
                    <td className="py-2 pr-4">{j.repo_name}</td>
                    <td className="py-2 pr-4 font-mono text-xs">{shortRef(j.ref)}</td>
                    <td className="py-2 pr-4 text-zinc-600 dark:text-zinc-400">{j.host ?? "—"}</td>
                    <td className="py-2">
                      <Elapsed from={j.since} to={null} now={now} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </Card>
      <Card
        title="Recent runs"
        id="recent-runs"
        actions={
          <Link href={`/orgs/${org}/runs`} className="text-sm text-blue-700 hover:underline dark:text-blue-400">
            All runs →
          </Link>
        }
      >
        {d.recent_runs.length === 0 ? (
          <EmptyState title="No runs yet">Push to a registered repository or trigger a run through the API.</EmptyState>
        ) : (
          <RunsTable org={org} runs={d.recent_runs} now={now} />
        )}
      </Card>
      <RecentOverridesCard org={org} now={now} />
    </div>
  );
}

function Stats({ d }: { d: OverviewData }) {
  const { last_hour: h, last_7_days: w } = d.infra_failure;
  return (
    <div className="grid grid-cols-2 gap-4 lg:grid-cols-4">
      <Stat label="Running · queued" value={`${d.running_count} · ${d.queued_count}`} hint="jobs right now" />
      <Stat
        label="Platform failures, 1 h"
        value={formatPercent(h.ratio)}
        hint={h.finished === 0 ? "no jobs finished in the last hour" : `${h.platform} of ${h.finished} finished jobs`}
      />
      <Stat
        label="Platform failures, 7 d"
        value={formatPercent(w.ratio)}
        hint={`${w.platform} of ${w.finished} jobs · ${d.platform_failed_attempts_7d} attempts lost to the platform`}
      />
      <Stat
        label="Queue wait p50 / p95"
        value={
          d.queue_wait.samples === 0
            ? "—"
            : `${formatDuration(d.queue_wait.p50_ms)} / ${formatDuration(d.queue_wait.p95_ms)}`
        }
        hint={`${d.queue_wait.samples} attempts claimed in the last hour`}
      />
    </div>
  );
}
