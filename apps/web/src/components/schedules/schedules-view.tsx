"use client";
import { Button, Card, DataTable, EmptyState, LoadingBlock, Notices } from "@kiln/ui";
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
        <DataTable
          rows={q.data}
          rowKey={(s) => s.id}
          rowProps={(s) => ({ "data-schedule": s.id })}
          testId="schedule-list"
          empty={
            <EmptyState title="No schedules">
              Add one below, or put <code>schedules:</code> at the top of the workflow file on the default branch.
            </EmptyState>
          }
          columns={[
            { key: "repo", header: "Repository", cell: (s) => s.repo },
            {
              key: "cron",
              header: "Cron",
              cell: (s) => (
                <>
                  <code className="font-mono">{s.cron}</code>{" "}
                  <span className="text-xs text-zinc-500 dark:text-zinc-400">{s.timezone}</span>
                  <div className="text-xs text-zinc-500 dark:text-zinc-400">
                    {s.origin === "workflow" ? "from the workflow file" : `added by ${s.created_by}`}
                  </div>
                </>
              ),
            },
            {
              key: "next-runs",
              header: "Next runs",
              cell: (s) => (
                <ul data-testid="next-runs">
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
              ),
            },
            {
              key: "last-run",
              header: "Last run",
              cell: (s) =>
                s.last_run_id ? (
                  <Link
                    className="font-mono text-blue-700 hover:underline dark:text-blue-400"
                    href={`/orgs/${org}/runs/${s.last_run_id}`}
                  >
                    {s.last_run_id.slice(0, 8)}
                  </Link>
                ) : (
                  <span className="text-zinc-500">none yet</span>
                ),
            },
            {
              key: "actions",
              header: "Actions",
              hideHeader: true,
              className: "text-right",
              cell: (s) => {
                if (!operate || s.origin !== "api") return null;
                const busy = remove.isPending && remove.variables?.scheduleId === s.id;
                return (
                  <Button
                    size="sm"
                    variant="danger"
                    aria-label={`Remove schedule ${s.cron} on ${s.repo}`}
                    disabled={busy}
                    onClick={() => remove.mutate({ org, scheduleId: s.id })}
                  >
                    {busy ? "Removing…" : "Remove"}
                  </Button>
                );
              },
            },
          ]}
        />
        <Notices error={removeError} note={status} />
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
