"use client";
import { Button, Card, EmptyState, ErrorState, formatTimestamp, inputClasses, LoadingBlock } from "@kiln/ui";
import { useQuery } from "@tanstack/react-query";
import { useId, useState, type FormEvent } from "react";
import { useTRPC } from "@/trpc/client.tsx";
import { useOrg } from "../org-context.tsx";
import { QueryError } from "../query-error.tsx";
import { DeletionEvidenceCard } from "../shredding/deletion-evidence-card.tsx";

const KINDS = [
  { value: "", label: "All kinds" },
  { value: "secret.", label: "Secrets (all)" },
  { value: "secret.read", label: "Secret reads" },
  { value: "secret.set", label: "Secret set" },
  { value: "secret.delete", label: "Secret deleted" },
  { value: "id_token.", label: "ID tokens" },
  { value: "token.", label: "API tokens" },
  { value: "egress.", label: "Egress" },
  { value: "entitlement.", label: "Entitlements" },
  { value: "pool.", label: "Pool policy" },
];

const SINCE = [
  { value: "", label: "Any time" },
  { value: "3600000", label: "Last hour" },
  { value: "86400000", label: "Last 24 hours" },
  { value: "604800000", label: "Last 7 days" },
];

/** One event's facts on one line: the keys an auditor scans for first, then the rest. */
function facts(data: Record<string, unknown>): string {
  const first = ["name", "version", "scope", "trust_class", "run_id", "job_id", "attempt", "ref"];
  const keys = [...first.filter((k) => k in data), ...Object.keys(data).filter((k) => !first.includes(k))];
  return keys.map((k) => `${k}=${typeof data[k] === "string" ? data[k] : JSON.stringify(data[k])}`).join("  ");
}

/**
 * The org's append-only audit trail (issue 16): every secret read, set and delete, token and
 * egress change, ID token minted. Admins and auditors; refreshed every 5 s while open.
 */
export function AuditView({ org }: { org: string }) {
  const trpc = useTRPC();
  const { role } = useOrg();
  const kindId = useId();
  const sinceId = useId();
  const [filter, setFilter] = useState<{ kind: string; sinceMs: string }>({ kind: "", sinceMs: "" });
  // Fixed when the filter is applied, so the query key (and its cache) does not change every render.
  const [since, setSince] = useState<string | undefined>(undefined);
  const allowed = role === "admin" || role === "auditor";
  const q = useQuery({
    ...trpc.audit.list.queryOptions({
      org,
      ...(filter.kind ? { kind: filter.kind } : {}),
      ...(since ? { since } : {}),
    }),
    enabled: allowed,
    refetchInterval: 5_000,
  });
  const onSubmit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const data = new FormData(e.currentTarget);
    const sinceMs = String(data.get("since") ?? "");
    setSince(sinceMs ? new Date(Date.now() - Number(sinceMs)).toISOString() : undefined);
    setFilter({ kind: String(data.get("kind") ?? ""), sinceMs });
  };
  const header = <h1 className="text-xl font-semibold tracking-tight">Audit trail</h1>;
  if (!allowed)
    return (
      <div className="space-y-6">
        {header}
        <ErrorState title="Admins and auditors only" message={`You are a ${role} of ${org}.`} />
      </div>
    );
  const events = q.data ?? [];
  return (
    <div className="space-y-6">
      {header}
      <Card title={`Events of ${org}`} id="audit">
        <form onSubmit={onSubmit} className="mb-4 flex flex-wrap items-end gap-3" data-testid="audit-filters">
          <div className="flex w-48 flex-col gap-1">
            <label htmlFor={kindId} className="text-xs font-medium text-zinc-700 dark:text-zinc-300">
              Kind
            </label>
            <select id={kindId} name="kind" className={inputClasses} defaultValue={filter.kind}>
              {KINDS.map((k) => (
                <option key={k.value} value={k.value}>
                  {k.label}
                </option>
              ))}
            </select>
          </div>
          <div className="flex w-40 flex-col gap-1">
            <label htmlFor={sinceId} className="text-xs font-medium text-zinc-700 dark:text-zinc-300">
              Since
            </label>
            <select id={sinceId} name="since" className={inputClasses} defaultValue={filter.sinceMs}>
              {SINCE.map((s) => (
                <option key={s.value} value={s.value}>
                  {s.label}
                </option>
              ))}
            </select>
          </div>
          <Button type="submit" variant="secondary">
            Apply
          </Button>
        </form>
        {q.isPending ? (
          <LoadingBlock label="Loading audit events" rows={5} />
        ) : q.isError ? (
          <QueryError error={q.error} what="Audit events" onRetry={() => void q.refetch()} />
        ) : events.length === 0 ? (
          <EmptyState title="No audit events">Nothing matching this filter has been recorded.</EmptyState>
        ) : (
          <table className="w-full text-left text-sm" data-testid="audit-table">
            <thead className="text-xs text-zinc-500 dark:text-zinc-400">
              <tr>
                <th scope="col" className="py-1.5 font-medium">
                  When
                </th>
                <th scope="col" className="py-1.5 font-medium">
                  Kind
                </th>
                <th scope="col" className="py-1.5 font-medium">
                  Actor
                </th>
                <th scope="col" className="py-1.5 font-medium">
                  Details
                </th>
              </tr>
            </thead>
            <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
              {events.map((e) => (
                <tr key={e.id} data-kind={e.kind}>
                  <td className="py-2 pr-4 whitespace-nowrap tabular-nums">
                    <time dateTime={e.at} suppressHydrationWarning>
                      {formatTimestamp(e.at)}
                    </time>
                  </td>
                  <td className="py-2 pr-4 font-mono">{e.kind}</td>
                  <td className="py-2 pr-4 font-mono text-xs">{e.actor}</td>
                  <td className="py-2 font-mono text-xs break-all text-zinc-600 dark:text-zinc-400">{facts(e.data)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        <p className="mt-2 text-xs text-zinc-500 dark:text-zinc-400">
          Newest first; the 200 most recent matching events. The API pages through all of them:{" "}
          <code className="font-mono">GET /v1/orgs/{org}/audit-events?kind=&amp;since=&amp;after=</code>.
        </p>
      </Card>
      <DeletionEvidenceCard org={org} />
    </div>
  );
}
