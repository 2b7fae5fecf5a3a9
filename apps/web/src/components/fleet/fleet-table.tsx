"use client";
import { type Column, DataTable } from "@kiln/ui";
import type { FleetHostData as FleetHost } from "../types.ts";
import Link from "next/link";
import { RelativeTime } from "../time.tsx";
import { HostActions } from "./host-actions.tsx";

export type FleetAction =
  | { kind: "drain" | "undrain" | "unquarantine" | "revoke"; runnerId: string; reason?: undefined }
  | { kind: "quarantine"; runnerId: string; reason: string }
  | { kind: "reclaim"; runnerId: string; pool: string; reason?: undefined };

const STATE_CLASS: Record<FleetHost["state"], string> = {
  online: "text-emerald-700 dark:text-emerald-400",
  draining: "text-amber-700 dark:text-amber-400",
  quarantined: "text-red-700 dark:text-red-400",
  offline: "text-zinc-500 dark:text-zinc-400",
  revoked: "text-zinc-500 line-through dark:text-zinc-400",
};

/** One row per host; the columns the fleet view promises (issue 22). */
export function FleetTable({
  hosts,
  now,
  busy,
  onAction,
}: {
  hosts: FleetHost[];
  now: number;
  busy: boolean;
  onAction: (a: FleetAction) => void;
}) {
  return (
    <DataTable
      rows={hosts}
      rowKey={(h) => h.id}
      rowProps={(h) => ({ "data-host": h.name })}
      testId="fleet-table"
      columns={[
        ...hostColumns(now),
        {
          key: "actions",
          header: "Actions",
          hideHeader: true,
          className: "text-right",
          cell: (h) => <HostActions host={h} busy={busy} onAction={onAction} />,
        },
      ]}
    />
  );
}

// The cells' data-field (the column key) is what the fleet e2e tests read.
function hostColumns(now: number): Column<FleetHost>[] {
  const muted = "text-zinc-500 dark:text-zinc-400";
  return [
    {
      key: "host",
      header: "Host",
      cell: (h) => (
        <>
          <span className="font-mono">{h.name}</span>
          <span className={`block text-xs ${muted}`}>
            {h.pool}
            {h.interruptible ? (
              <span
                className="ml-1 rounded bg-sky-100 px-1 text-sky-800 dark:bg-sky-900 dark:text-sky-200"
                data-field="interruptible"
              >
                interruptible
              </span>
            ) : null}
            {h.org ? ` · ${h.org}` : ""}
          </span>
        </>
      ),
    },
    {
      key: "state",
      header: "State",
      cell: (h) => (
        <>
          <span className={STATE_CLASS[h.state]}>{h.state}</span>
          {h.quarantineReason ? (
            <span className="block text-xs text-zinc-600 dark:text-zinc-400" data-field="quarantine-reason">
              {h.quarantineReason}
            </span>
          ) : null}
          {h.reclaimRequestedAt ? (
            <span className="block text-xs text-sky-700 dark:text-sky-300" data-field="reclaim-requested">
              reclaim requested <RelativeTime iso={h.reclaimRequestedAt} now={now} />
            </span>
          ) : null}
        </>
      ),
    },
    {
      key: "heartbeat",
      header: "Last heartbeat",
      cell: (h) => (h.lastHeartbeatAt ? <RelativeTime iso={h.lastHeartbeatAt} now={now} /> : "never"),
    },
    {
      key: "isolation",
      header: "Isolation · labels",
      cell: (h) => (
        <>
          {h.isolation ?? "?"}
          {h.labels.length > 0 ? <span className="block font-mono text-xs">{h.labels.join(", ")}</span> : null}
        </>
      ),
    },
    { key: "slots", header: "Slots", cell: (h) => `${h.slots.inUse} / ${h.slots.total ?? "?"}` },
    {
      key: "running",
      header: "Running",
      cell: (h) =>
        h.runningJobs.length === 0 ? (
          <span className={muted}>idle</span>
        ) : (
          <ul>
            {h.runningJobs.map((j) => (
              <li key={j.jobId}>
                <Link href={`../runs/${j.runId}`} className="underline-offset-2 hover:underline">
                  {j.name}
                </Link>
              </li>
            ))}
          </ul>
        ),
    },
    { key: "agent-version", header: "Agent", className: "font-mono text-xs", cell: (h) => h.agentVersion ?? "?" },
    {
      key: "warm-pool",
      header: "Warm pool",
      cell: (h) =>
        h.warmPool ? (
          <>
            {h.warmPool.size} ready
            <span className={`block text-xs ${muted}`}>
              {h.warmPool.hits} hits · {h.warmPool.misses} misses
            </span>
          </>
        ) : (
          <span className={muted}>not reported</span>
        ),
    },
    { key: "failures", header: "Failures (1 h)", cell: (h) => h.platformFailuresLastHour },
    { key: "reclaims", header: "Reclaims (1 h)", cell: (h) => h.reclaimsLastHour },
  ];
}
