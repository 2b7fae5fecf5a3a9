"use client";
import { Card, EmptyState, formatBytes, inputClasses, LoadingBlock, Stat, Button } from "@kiln/ui";
import { useQuery } from "@tanstack/react-query";
import { useId, useState, type FormEvent } from "react";
import { useTRPC } from "@/trpc/client.tsx";
import { QueryError } from "../query-error.tsx";
import { MinutesChart } from "./minutes-chart.tsx";

const min = (s: number) => (s / 60).toFixed(1);

/** Showback (issue 33, docs/adr/0045): the org's minutes and stored bytes; the same numbers as the API. */
export function UsageView({ org }: { org: string }) {
  const trpc = useTRPC();
  const fromId = useId();
  const toId = useId();
  const [period, setPeriod] = useState<{ from?: string; to?: string }>({});
  const q = useQuery(trpc.usage.get.queryOptions({ org, ...period }));
  const onSubmit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const data = new FormData(e.currentTarget);
    const from = String(data.get("from") ?? "");
    const to = String(data.get("to") ?? "");
    setPeriod({ ...(from ? { from } : {}), ...(to ? { to } : {}) });
  };
  const csv = `/v1/orgs/${org}/usage?format=csv${period.from ? `&from=${period.from}` : ""}${period.to ? `&to=${period.to}` : ""}`;
  return (
    <div className="space-y-6">
      <h1 className="text-xl font-semibold tracking-tight">Usage</h1>
      <form onSubmit={onSubmit} className="flex flex-wrap items-end gap-3" data-testid="usage-period">
        <div className="flex flex-col gap-1">
          <label htmlFor={fromId} className="text-xs font-medium">
            From (UTC)
          </label>
          <input id={fromId} name="from" type="date" className={inputClasses} />
        </div>
        <div className="flex flex-col gap-1">
          <label htmlFor={toId} className="text-xs font-medium">
            To (exclusive)
          </label>
          <input id={toId} name="to" type="date" className={inputClasses} />
        </div>
        <Button type="submit">Show</Button>
        <span className="text-xs text-zinc-500">CSV: GET {csv} with an API token, or kiln usage --csv</span>
      </form>
      {q.isPending ? (
        <LoadingBlock label="Loading usage" rows={4} />
      ) : q.isError ? (
        <QueryError error={q.error} what="Usage" onRetry={() => void q.refetch()} />
      ) : (
        <>
          <div className="grid gap-3 sm:grid-cols-3">
            <Stat label="Job-minutes" value={min(q.data.totals.seconds)} hint={`${q.data.totals.attempts} attempts`} />
            <Stat label="Billable minutes" value={min(q.data.totals.billableSeconds)} />
            <Stat
              label="Quota this month"
              value={q.data.quota.quotaMinutes === null ? "unlimited" : `${q.data.quota.percent}%`}
              hint={
                q.data.quota.quotaMinutes === null
                  ? undefined
                  : `${min(q.data.quota.usedSeconds)} of ${q.data.quota.quotaMinutes} minutes`
              }
            />
          </div>
          <Card title="Minutes per day" id="usage-chart">
            {q.data.daily.length === 0 ? (
              <EmptyState title="No job-minutes in this period" />
            ) : (
              <MinutesChart days={q.data.daily} />
            )}
          </Card>
          <Card title="By repository, pool and size" id="usage-minutes">
            {q.data.minutes.length === 0 ? (
              <EmptyState title="No attempts ended in this period" />
            ) : (
              <table className="w-full text-left text-sm" data-testid="usage-minutes">
                <thead>
                  <tr className="text-xs text-zinc-500">
                    <th className="py-1">Repository</th>
                    <th>Pool</th>
                    <th>Size</th>
                    <th>Hosting</th>
                    <th className="text-right">Attempts</th>
                    <th className="text-right">Minutes</th>
                    <th className="text-right">Billable</th>
                  </tr>
                </thead>
                <tbody>
                  {q.data.minutes.map((m) => (
                    <tr
                      key={`${m.repo}|${m.pool}|${m.size}|${m.selfHosted}`}
                      className="border-t border-zinc-100 dark:border-zinc-800"
                    >
                      <td className="py-1">{m.repo}</td>
                      <td>{m.pool}</td>
                      <td>{m.size}</td>
                      <td>{m.selfHosted ? "self-hosted" : "platform"}</td>
                      <td className="text-right tabular-nums">{m.attempts}</td>
                      <td className="text-right tabular-nums">{min(m.seconds)}</td>
                      <td className="text-right tabular-nums">{min(m.billableSeconds)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </Card>
          <Card title="Stored bytes by retention class" id="usage-storage">
            {q.data.storage.length === 0 ? (
              <EmptyState title="No artifacts or caches stored" />
            ) : (
              <ul className="space-y-1 text-sm">
                {q.data.storage.map((s) => (
                  <li key={`${s.repo}|${s.kind}|${s.retentionClass}`}>
                    {s.repo} · {s.kind} · {s.retentionClass}: {formatBytes(s.bytes)} in {s.objects} objects
                  </li>
                ))}
              </ul>
            )}
          </Card>
        </>
      )}
    </div>
  );
}
