"use client";
import { Card, DataTable, EmptyState, ErrorState, Form, formatTimestamp, SelectField, StatusGate } from "@kiln/ui";
import { useQuery } from "@tanstack/react-query";
import { useState } from "react";
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
  const onSubmit = (data: FormData) => {
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
  return (
    <div className="space-y-6">
      {header}
      <Card title={`Events of ${org}`} id="audit">
        <Form
          label="Filter audit events"
          testId="audit-filters"
          className="mb-4"
          onSubmit={onSubmit}
          pending={false}
          submitLabel="Apply"
          pendingLabel="Applying…"
          submitVariant="secondary"
        >
          <SelectField label="Kind" name="kind" className="w-48" defaultValue={filter.kind}>
            {KINDS.map((k) => (
              <option key={k.value} value={k.value}>
                {k.label}
              </option>
            ))}
          </SelectField>
          <SelectField label="Since" name="since" className="w-40" defaultValue={filter.sinceMs}>
            {SINCE.map((s) => (
              <option key={s.value} value={s.value}>
                {s.label}
              </option>
            ))}
          </SelectField>
        </Form>
        <StatusGate
          pending={q.isPending}
          error={q.error}
          loadingLabel="Loading audit events"
          loadingRows={5}
          renderError={(e) => <QueryError error={e} what="Audit events" onRetry={() => void q.refetch()} />}
        >
          {() => (
            <DataTable
              rows={q.data ?? []}
              rowKey={(e) => e.id}
              rowProps={(e) => ({ "data-kind": e.kind })}
              testId="audit-table"
              empty={<EmptyState title="No audit events">Nothing matching this filter has been recorded.</EmptyState>}
              columns={[
                {
                  key: "when",
                  header: "When",
                  className: "whitespace-nowrap tabular-nums",
                  cell: (e) => (
                    <time dateTime={e.at} suppressHydrationWarning>
                      {formatTimestamp(e.at)}
                    </time>
                  ),
                },
                { key: "kind", header: "Kind", className: "font-mono", cell: (e) => e.kind },
                { key: "actor", header: "Actor", className: "font-mono text-xs", cell: (e) => e.actor },
                {
                  key: "details",
                  header: "Details",
                  className: "font-mono text-xs break-all text-zinc-600 dark:text-zinc-400",
                  cell: (e) => facts(e.data),
                },
              ]}
            />
          )}
        </StatusGate>
        <p className="mt-2 text-xs text-zinc-500 dark:text-zinc-400">
          Newest first; the 200 most recent matching events. The API pages through all of them:{" "}
          <code className="font-mono">GET /v1/orgs/{org}/audit-events?kind=&amp;since=&amp;after=</code>.
        </p>
      </Card>
      <DeletionEvidenceCard org={org} />
    </div>
  );
}
