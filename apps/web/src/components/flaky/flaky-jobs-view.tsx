"use client";
import { Card, EmptyState, LoadingBlock, shortSha } from "@kiln/ui";
import { skipToken, useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { usePathname, useRouter } from "next/navigation";
import { useTRPC } from "@/trpc/client.tsx";
import { QueryError } from "../query-error.tsx";
import { RelativeTime, useNow } from "../time.tsx";

/**
 * A repo's flaky jobs (issue 20): jobs that passed and failed at one commit and definition. Refreshed
 * every 30 s. Information for people: nothing here quarantines or skips a job.
 */
export function FlakyJobsView({ org, repoParam }: { org: string; repoParam: string | null }) {
  const trpc = useTRPC();
  const router = useRouter();
  const pathname = usePathname();
  const now = useNow(5000);
  const repos = useQuery(trpc.runs.repos.queryOptions({ org }));
  const repoId = repoParam ?? repos.data?.[0]?.id ?? null;
  const flaky = useQuery({
    ...trpc.runs.flaky.queryOptions(repoId === null ? skipToken : { org, repoId }),
    refetchInterval: 30_000,
  });
  return (
    <div className="space-y-4">
      <div className="flex flex-wrap items-end justify-between gap-4">
        <div>
          <h1 className="text-xl font-semibold tracking-tight">Flaky jobs</h1>
          <p className="text-sm text-zinc-600 dark:text-zinc-400">
            Jobs that both passed and failed on the same commit and workflow definition (and matrix values). Kiln
            reports them; it never quarantines them.
          </p>
        </div>
        {repos.data && repos.data.length > 0 ? (
          <label className="flex flex-col gap-1 text-sm">
            <span className="text-xs font-medium text-zinc-600 dark:text-zinc-400">Repository</span>
            <select
              className="h-8 rounded-md border border-zinc-300 bg-white px-2 text-sm focus-visible:outline-2 focus-visible:outline-blue-600 dark:border-zinc-700 dark:bg-zinc-950"
              value={repoId ?? ""}
              onChange={(e) => router.replace(`${pathname}?repo=${e.target.value}`)}
            >
              {repos.data.map((r) => (
                <option key={r.id} value={r.id}>
                  {r.full_name}
                </option>
              ))}
            </select>
          </label>
        ) : null}
      </div>
      <Card>
        {repos.isPending || (repoId !== null && flaky.isPending) ? (
          <LoadingBlock label="Loading flaky jobs" rows={4} />
        ) : repos.isError ? (
          <QueryError error={repos.error} what="Repositories" onRetry={() => void repos.refetch()} />
        ) : repoId === null ? (
          <EmptyState title="No repositories">Register a repository to see its flaky jobs.</EmptyState>
        ) : flaky.isError ? (
          <QueryError error={flaky.error} what="Repository" onRetry={() => void flaky.refetch()} />
        ) : !flaky.data || flaky.data.length === 0 ? (
          <EmptyState title="No flaky jobs">
            No job of this repository has both passed and failed on one commit.
          </EmptyState>
        ) : (
          <table className="w-full text-left text-sm" data-testid="flaky-jobs">
            <thead className="text-xs uppercase tracking-wide text-zinc-500 dark:text-zinc-400">
              <tr>
                <th scope="col" className="py-1.5 pr-4 font-medium">
                  Job
                </th>
                <th scope="col" className="py-1.5 pr-4 font-medium">
                  Commits
                </th>
                <th scope="col" className="py-1.5 pr-4 font-medium">
                  Attempts
                </th>
                <th scope="col" className="py-1.5 pr-4 font-medium">
                  Last seen
                </th>
                <th scope="col" className="py-1.5 font-medium">
                  Last run
                </th>
              </tr>
            </thead>
            <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
              {flaky.data.map((f) => (
                <tr key={`${f.name}/${JSON.stringify(f.matrix)}`} data-job={f.name}>
                  <td className="py-1.5 pr-4 font-medium">{f.name}</td>
                  <td className="py-1.5 pr-4 tabular-nums">{f.commits}</td>
                  <td className="py-1.5 pr-4 tabular-nums">{f.attempts}</td>
                  <td className="py-1.5 pr-4">
                    <RelativeTime iso={f.last_seen} now={now} />
                  </td>
                  <td className="py-1.5">
                    <Link
                      href={`/orgs/${org}/runs/${f.last_run_id}`}
                      className="font-mono text-xs text-blue-700 hover:underline focus-visible:outline-2 focus-visible:outline-blue-600 dark:text-blue-400"
                    >
                      {f.last_run_id.slice(0, 8)} @ {shortSha(f.last_commit_sha)}
                    </Link>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Card>
    </div>
  );
}
