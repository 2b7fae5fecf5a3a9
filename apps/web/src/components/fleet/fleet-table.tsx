"use client";
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
  const th = "py-1.5 pr-3 font-medium";
  return (
    <div className="overflow-x-auto">
      <table className="w-full text-left text-sm" data-testid="fleet-table">
        <thead className="text-xs text-zinc-500 dark:text-zinc-400">
          <tr>
            <th scope="col" className={th}>
              Host
            </th>
            <th scope="col" className={th}>
              State
            </th>
            <th scope="col" className={th}>
              Last heartbeat
            </th>
            <th scope="col" className={th}>
              Isolation · labels
            </th>
            <th scope="col" className={th}>
              Slots
            </th>
            <th scope="col" className={th}>
              Running
            </th>
            <th scope="col" className={th}>
              Agent
            </th>
            <th scope="col" className={th}>
              Warm pool
            </th>
            <th scope="col" className={th}>
              Failures (1 h)
            </th>
            <th scope="col" className={th}>
              Reclaims (1 h)
            </th>
            <th scope="col" className={th}>
              <span className="sr-only">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
          {hosts.map((h) => (
            <tr key={h.id} data-host={h.name} className="align-top">
              <td className="py-2 pr-3">
                <span className="font-mono">{h.name}</span>
                <span className="block text-xs text-zinc-500 dark:text-zinc-400">
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
              </td>
              <td className="py-2 pr-3" data-field="state">
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
              </td>
              <td className="py-2 pr-3" data-field="heartbeat">
                {h.lastHeartbeatAt ? <RelativeTime iso={h.lastHeartbeatAt} now={now} /> : "never"}
              </td>
              <td className="py-2 pr-3" data-field="isolation">
                {h.isolation ?? "?"}
                {h.labels.length > 0 ? <span className="block font-mono text-xs">{h.labels.join(", ")}</span> : null}
              </td>
              <td className="py-2 pr-3" data-field="slots">
                {h.slots.inUse} / {h.slots.total ?? "?"}
              </td>
              <td className="py-2 pr-3" data-field="running">
                {h.runningJobs.length === 0 ? (
                  <span className="text-zinc-500 dark:text-zinc-400">idle</span>
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
                )}
              </td>
              <td className="py-2 pr-3 font-mono text-xs" data-field="agent-version">
                {h.agentVersion ?? "?"}
              </td>
              <td className="py-2 pr-3" data-field="warm-pool">
                {h.warmPool ? (
                  <>
                    {h.warmPool.size} ready
                    <span className="block text-xs text-zinc-500 dark:text-zinc-400">
                      {h.warmPool.hits} hits · {h.warmPool.misses} misses
                    </span>
                  </>
                ) : (
                  <span className="text-zinc-500 dark:text-zinc-400">not reported</span>
                )}
              </td>
              <td className="py-2 pr-3" data-field="failures">
                {h.platformFailuresLastHour}
              </td>
              <td className="py-2 pr-3" data-field="reclaims">
                {h.reclaimsLastHour}
              </td>
              <td className="py-2 text-right">
                <HostActions host={h} busy={busy} onAction={onAction} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
