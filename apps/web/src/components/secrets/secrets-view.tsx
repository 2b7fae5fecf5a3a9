"use client";
import { Button, Card, EmptyState, ErrorState, LoadingBlock } from "@kiln/ui";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useState } from "react";
import { useTRPC } from "@/trpc/client.tsx";
import { useOrg } from "../org-context.tsx";
import { QueryError } from "../query-error.tsx";
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
  const header = (
    <div>
      <p className="text-sm">
        <Link
          href={`/orgs/${org}/settings`}
          className="text-zinc-600 underline-offset-2 hover:underline dark:text-zinc-400"
        >
          Settings
        </Link>
      </p>
      <h1 className="text-xl font-semibold tracking-tight">Secrets</h1>
    </div>
  );
  if (!admin)
    return (
      <div className="space-y-6">
        {header}
        <ErrorState
          title="Admins only"
          message={`You are a ${role} of ${org}; only its admins can manage its secrets.`}
        />
      </div>
    );
  if (q.isPending)
    return (
      <div className="space-y-6">
        {header}
        <LoadingBlock label="Loading secrets" rows={4} />
      </div>
    );
  if (q.isError)
    return (
      <div className="space-y-6">
        {header}
        <QueryError error={q.error} what="Secrets" onRetry={() => void q.refetch()} />
      </div>
    );
  const secrets = q.data;
  return (
    <div className="space-y-6">
      {header}
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
          trusted; untrusted runs (forks, non-members) receive none. A repository&apos;s secret overrides the org&apos;s
          of the same name. Every delivery is in the{" "}
          <Link href={`/orgs/${org}/audit`} className="underline underline-offset-2">
            audit trail
          </Link>
          .
        </p>
        {secrets.length === 0 ? (
          <EmptyState title="No secrets">
            Set one below, or with <code className="font-mono">npm run kiln -- secret set {org} NAME</code>.
          </EmptyState>
        ) : (
          <table className="w-full text-left text-sm" data-testid="secrets-table">
            <thead className="text-xs text-zinc-500 dark:text-zinc-400">
              <tr>
                <th scope="col" className="py-1.5 font-medium">
                  Name
                </th>
                <th scope="col" className="py-1.5 font-medium">
                  Scope
                </th>
                <th scope="col" className="py-1.5 font-medium">
                  Version
                </th>
                <th scope="col" className="py-1.5 font-medium">
                  Changed by
                </th>
                <th scope="col" className="py-1.5 font-medium">
                  Changed
                </th>
                <th scope="col" className="py-1.5 font-medium">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
              {secrets.map((s) => {
                const repoId = s.scope === "org" ? null : s.scope.slice("repo:".length);
                const busy =
                  remove.isPending && remove.variables?.name === s.name && remove.variables.repoId === repoId;
                return (
                  <tr key={`${s.scope}:${s.name}`} data-secret={`${s.scope}:${s.name}`}>
                    <td className="py-2 font-mono">{s.name}</td>
                    <td className="py-2">{repoName(s.scope)}</td>
                    <td className="py-2 tabular-nums" data-testid="secret-version">
                      v{s.version}
                    </td>
                    <td className="py-2 font-mono text-xs">{s.updated_by}</td>
                    <td className="py-2">
                      <RelativeTime iso={s.updated_at} now={now} />
                    </td>
                    <td className="py-2 text-right">
                      <Button
                        size="sm"
                        variant="danger"
                        aria-label={`Delete ${s.name} (${repoName(s.scope)})`}
                        disabled={busy}
                        onClick={() => remove.mutate({ org, repoId, name: s.name })}
                      >
                        {busy ? "Deleting…" : "Delete"}
                      </Button>
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        )}
        {error ? (
          <p role="alert" className="mt-2 text-sm text-red-700 dark:text-red-400">
            {error}
          </p>
        ) : null}
        <p role="status" className="mt-2 text-sm text-emerald-700 empty:hidden dark:text-emerald-400">
          {note ?? ""}
        </p>
        <SetSecretForm org={org} repos={repos.data ?? []} onSaved={refresh} />
      </Card>
    </div>
  );
}
