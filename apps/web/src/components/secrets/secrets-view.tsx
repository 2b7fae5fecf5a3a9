"use client";
import { Button, Card, DataTable, EmptyState, Notices } from "@kiln/ui";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useState } from "react";
import { useTRPC } from "@/trpc/client.tsx";
import { useOrg } from "../org-context.tsx";
import { AdminPage } from "../admin/admin-page.tsx";
import { RelativeTime, useNow } from "../time.tsx";
import { SetSecretForm } from "./set-secret-form.tsx";

/**
 * The org's secrets (issue 16, ADR 0025): names, scopes, versions, who changed each and when.
 * Values are write-only: this page sends them and never receives one. Admins only; the server
 * refuses everyone else in the tenant query. Refreshed every 10 s so a CLI or API change shows.
 */
export function SecretsView({ org }: { org: string }) {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const { role } = useOrg();
  const now = useNow(30_000);
  const admin = role === "admin";
  const q = useQuery({ ...trpc.secrets.list.queryOptions({ org }), enabled: admin, refetchInterval: 10_000 });
  const repos = useQuery({ ...trpc.runs.repos.queryOptions({ org }), enabled: admin });
  const [note, setNote] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const refresh = () => qc.invalidateQueries({ queryKey: trpc.secrets.list.queryKey({ org }) });
  const remove = useMutation(
    trpc.secrets.delete.mutationOptions({
      onMutate: () => {
        setNote(null);
        setError(null);
      },
      onSuccess: async (r) => {
        await refresh();
        setNote(`Deleted ${r.name} (was version ${r.version}). Jobs started from now on do not receive it.`);
        document.querySelector<HTMLElement>("#secrets-heading")?.focus();
      },
      onError: (e, v) => setError(`Could not delete ${v.name}: ${e.message}`),
    }),
  );
  const repoName = (scope: string) => {
    if (scope === "org") return "org";
    const id = scope.slice("repo:".length);
    return repos.data?.find((r) => r.id === id)?.full_name ?? id;
  };
  return (
    <AdminPage org={org} title="Secrets" what="Secrets" query={q}>
      {() => (
        <Card
          title={
            <span id="secrets-heading" tabIndex={-1}>
              Secrets of {org}
            </span>
          }
          id="secrets"
        >
          <p className="mb-3 text-sm text-zinc-600 dark:text-zinc-400">
            A job receives a secret only if it lists it under <code className="font-mono">secrets:</code> and its run is
            trusted; untrusted runs (forks, non-members) receive none. A repository&apos;s secret overrides the
            org&apos;s of the same name. Every delivery is in the{" "}
            <Link href={`/orgs/${org}/audit`} className="underline underline-offset-2">
              audit trail
            </Link>
            .
          </p>
          <DataTable
            rows={q.data ?? []}
            rowKey={(s) => `${s.scope}:${s.name}`}
            rowProps={(s) => ({ "data-secret": `${s.scope}:${s.name}` })}
            testId="secrets-table"
            empty={
              <EmptyState title="No secrets">
                Set one below, or with <code className="font-mono">npm run kiln -- secret set {org} NAME</code>.
              </EmptyState>
            }
            columns={[
              { key: "name", header: "Name", className: "font-mono", cell: (s) => s.name },
              { key: "scope", header: "Scope", cell: (s) => repoName(s.scope) },
              {
                key: "version",
                header: "Version",
                className: "tabular-nums",
                cell: (s) => <span data-testid="secret-version">v{s.version}</span>,
              },
              { key: "changed-by", header: "Changed by", className: "font-mono text-xs", cell: (s) => s.updated_by },
              { key: "changed", header: "Changed", cell: (s) => <RelativeTime iso={s.updated_at} now={now} /> },
              {
                key: "actions",
                header: "Actions",
                hideHeader: true,
                className: "text-right",
                cell: (s) => {
                  const repoId = s.scope === "org" ? null : s.scope.slice("repo:".length);
                  const busy =
                    remove.isPending && remove.variables?.name === s.name && remove.variables.repoId === repoId;
                  return (
                    <Button
                      size="sm"
                      variant="danger"
                      aria-label={`Delete ${s.name} (${repoName(s.scope)})`}
                      disabled={busy}
                      onClick={() => remove.mutate({ org, repoId, name: s.name })}
                    >
                      {busy ? "Deleting…" : "Delete"}
                    </Button>
                  );
                },
              },
            ]}
          />
          <Notices error={error} note={note} />
          <SetSecretForm org={org} repos={repos.data ?? []} onSaved={refresh} />
        </Card>
      )}
    </AdminPage>
  );
}
