"use client";
import { Card, EmptyState, LoadingBlock } from "@kiln/ui";
import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useTRPC } from "@/trpc/client.tsx";
import { useOrg } from "../org-context.tsx";
import { QueryError } from "../query-error.tsx";
import { NewEnvironmentForm } from "./new-environment-form.tsx";

/** The org's environments in promotion order, each with the digest it runs (refreshed every 5 s). */
export function EnvironmentsList({ org }: { org: string }) {
  const trpc = useTRPC();
  const { role } = useOrg();
  const q = useQuery({ ...trpc.environments.list.queryOptions({ org }), refetchInterval: 5_000 });
  if (q.isPending) return <LoadingBlock label="Loading environments" rows={3} />;
  if (q.isError) return <QueryError error={q.error} what="Environments" onRetry={() => void q.refetch()} />;
  return (
    <div className="space-y-6">
      <h1 className="text-xl font-semibold tracking-tight">Environments</h1>
      <Card title="All environments" id="environments">
        {q.data.length === 0 ? (
          <EmptyState title="No environments">
            Create one below, with <code>npm run kiln -- env create &lt;org&gt;/&lt;repo&gt; staging</code> or the API.
          </EmptyState>
        ) : (
          <ul className="divide-y divide-zinc-100 text-sm dark:divide-zinc-800" data-testid="environments">
            {q.data.map((e) => (
              <li key={e.id} className="flex flex-wrap items-baseline gap-x-3 py-2">
                <Link
                  className="font-medium text-blue-700 hover:underline dark:text-blue-400"
                  href={`/orgs/${org}/environments/${e.id}`}
                >
                  {e.repo} / {e.name}
                </Link>
                <span className="text-zinc-500">
                  {e.pointer ? (
                    <code className="font-mono text-xs">sha256:{e.pointer.digest.slice(0, 12)}…</code>
                  ) : (
                    "nothing promoted"
                  )}
                </span>
              </li>
            ))}
          </ul>
        )}
      </Card>
      {role === "admin" ? <NewEnvironmentForm org={org} /> : null}
    </div>
  );
}
