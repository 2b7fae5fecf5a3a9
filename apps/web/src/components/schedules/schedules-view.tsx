"use client";
import { Button, Card, EmptyState, LoadingBlock } from "@kiln/ui";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useState } from "react";
import { useTRPC } from "@/trpc/client.tsx";
import { canOperate, useOrg } from "../org-context.tsx";
import { QueryError } from "../query-error.tsx";
import { RelativeTime, useNow } from "../time.tsx";
import { AddScheduleForm } from "./add-schedule-form.tsx";

/** The slot as the schedule's own clock shows it (the zone it was written in). */
function wallTime(iso: string, timeZone: string): string {
  return new Intl.DateTimeFormat("en-GB", { timeZone, dateStyle: "medium", timeStyle: "short" }).format(new Date(iso));
}

/**
 * The org's schedules (issue 20, ADR 0031): from workflow files on default branches and added
 * here, the API or the CLI, each with its next runs on the scheduler's own walk. Refreshed every
 * 30 s so "next" and "last" move without a reload; members and admins add and remove.
 */
export function SchedulesView({ org }: { org: string }) {
  const trpc = useTRPC();
  const { role } = useOrg();
  const queryClient = useQueryClient();
  const q = useQuery({ ...trpc.schedules.list.queryOptions({ org }), refetchInterval: 30_000 });
  const repos = useQuery(trpc.runs.repos.queryOptions({ org }));
  const now = useNow(10_000);
  const [status, setStatus] = useState<string | null>(null);
  const [removeError, setRemoveError] = useState<string | null>(null);
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.schedules.list.queryKey({ org }) });
  const remove = useMutation(
    trpc.schedules.remove.mutationOptions({
      onMutate: () => {
        setRemoveError(null);
        setStatus(null);
      },
      onSuccess: async () => {
        await refresh();
        setStatus("Schedule removed.");
        document.querySelector<HTMLInputElement>("#add-schedule input[name=cron]")?.focus();
      },
      onError: (e) => setRemoveError(`Could not remove the schedule: ${e.message}`),
    }),
  );
  if (q.isPending) return <LoadingBlock label="Loading schedules" rows={4} />;
  if (q.isError) return <QueryError error={q.error} what="Schedules" onRetry={() => void q.refetch()} />;
  const operate = canOperate(role);
  return (
    <div className="space-y-6">
      <div>
        <h1 className="text-xl font-semibold tracking-tight">Schedules</h1>
        <p className="text-sm text-zinc-600 dark:text-zinc-400">
          Each slot starts one run at the head of the repository&apos;s default branch, on the scheduled tier. A slot
          missed while Kiln was down runs once when it is back.
        </p>
      </div>
      <Card title="All schedules" id="schedules">
        {q.data.length === 0 ? (
          <EmptyState title="No schedules">
            Add one below, or put <code>schedules:</code> at the top of the workflow file on the default branch.
          </EmptyState>
        ) : (
          <table className="w-full text-left text-sm" data-testid="schedule-list">
            <thead className="text-xs uppercase tracking-wide text-zinc-500 dark:text-zinc-400">
              <tr>
                <th scope="col" className="py-1.5 pr-4 font-medium">
                  Repository
                </th>
                <th scope="col" className="py-1.5 pr-4 font-medium">
                  Cron
                </th>
                <th scope="col" className="py-1.5 pr-4 font-medium">
                  Next runs
                </th>
                <th scope="col" className="py-1.5 pr-4 font-medium">
                  Last run
                </th>
                <th scope="col" className="py-1.5 font-medium">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {q.data.map((s) => (
                <tr key={s.id} className="border-t border-zinc-100 align-top dark:border-zinc-800" data-schedule={s.id}>
                  <td className="py-2 pr-4">{s.repo}</td>
                  <td className="py-2 pr-4">
                    <code className="font-mono">{s.cron}</code>{" "}
                    <span className="text-xs text-zinc-500 dark:text-zinc-400">{s.timezone}</span>
                    <div className="text-xs text-zinc-500 dark:text-zinc-400">
                      {s.origin === "workflow" ? "from the workflow file" : `added by ${s.created_by}`}
                    </div>
                  </td>
                  <td className="py-2 pr-4" data-testid="next-runs">
                    <ul>
                      {s.next_runs.map((n) => (
                        <li key={n}>
                          <RelativeTime iso={n} now={now} />
                          <span className="text-xs text-zinc-500 dark:text-zinc-400" suppressHydrationWarning>
                            {" · "}
                            {wallTime(n, s.timezone)}
                          </span>
                        </li>
                      ))}
                    </ul>
                  </td>
                  <td className="py-2 pr-4">
                    {s.last_run_id ? (
                      <Link
                        className="font-mono text-blue-700 hover:underline dark:text-blue-400"
                        href={`/orgs/${org}/runs/${s.last_run_id}`}
                      >
                        {s.last_run_id.slice(0, 8)}
                      </Link>
                    ) : (
                      <span className="text-zinc-500">none yet</span>
                    )}
                  </td>
                  <td className="py-2 text-right">
                    {operate && s.origin === "api" ? (
                      <Button
                        size="sm"
                        variant="danger"
                        aria-label={`Remove schedule ${s.cron} on ${s.repo}`}
                        disabled={remove.isPending && remove.variables?.scheduleId === s.id}
                        onClick={() => remove.mutate({ org, scheduleId: s.id })}
                      >
                        {remove.isPending && remove.variables?.scheduleId === s.id ? "Removing…" : "Remove"}
                      </Button>
                    ) : null}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        {removeError ? (
          <p role="alert" className="mt-2 text-sm text-red-700 dark:text-red-400">
            {removeError}
          </p>
        ) : null}
        <p role="status" className="mt-2 text-sm text-emerald-700 empty:hidden dark:text-emerald-400">
          {status ?? ""}
        </p>
        {operate ? (
          <AddScheduleForm
            org={org}
            repos={repos.data ?? []}
            onAdded={async (m) => {
              await refresh();
              setStatus(m);
            }}
          />
        ) : null}
      </Card>
    </div>
  );
}
