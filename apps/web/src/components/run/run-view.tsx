"use client";
import { Card, JobGraph, LoadingBlock, shortRef, shortSha, StatusBadge } from "@kiln/ui";
import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useTRPC } from "@/trpc/client.tsx";
import { AppLink } from "../app-link.tsx";
import { QueryError } from "../query-error.tsx";
import { Elapsed, RelativeTime, useNow } from "../time.tsx";
import type { RunPageData } from "../types.ts";
import { FirstFailureCard } from "./first-failure-card.tsx";
import { ForgeStatuses } from "./forge-statuses.tsx";
import { JobDetails } from "./job-details.tsx";
import { ArtifactsList, CachesList, DefinitionFacts } from "./run-facts.tsx";
import { RunActions } from "./run-actions.tsx";
import { queueDetail, WaitingJobs } from "./waiting-jobs.tsx";
import { RunHistory } from "../provenance/run-history.tsx";

/**
 * The run page. Live updates are polling: react-query refetches every 2 s while the run is not
 * completed and stops once it is (the SSE stream is for logs; run status changes are few and
 * coarse, and a poll survives proxies and reconnects with no extra machinery).
 */
export function RunView({ org, runId }: { org: string; runId: string }) {
  const trpc = useTRPC();
  const q = useQuery({
    ...trpc.runs.get.queryOptions({ org, runId }),
    // After completion, keep polling while an artifact's provenance or a forge status is still on
    // its way (signing and verifying; delivery to the forge): then the page goes quiet.
    refetchInterval: (query) => {
      const d = query.state.data;
      if (!d) return 2_000;
      if (d.run.status !== "completed") return 2_000;
      if (d.artifacts.some((a) => a.attestation_state === "pending" || a.attestation_state === "logged")) return 2_000;
      return d.run.forge_statuses.some((s) => s.delivery === "pending") ? 5_000 : false;
    },
  });
  const now = useNow(1000);
  if (q.isPending) return <LoadingBlock label="Loading run" rows={8} />;
  if (q.isError) return <QueryError error={q.error} what="Run" onRetry={() => void q.refetch()} />;
  const d = q.data;
  const r = d.run;
  return (
    <div className="space-y-6">
      <RunHeader org={org} d={d} now={now} />
      <FirstFailureCard data={d} />
      <Card title="Jobs" id="job-graph">
        <JobGraph
          Link={AppLink}
          highlightId={d.first_failure?.job_id ?? null}
          jobs={r.jobs.map((j) => ({
            id: j.id,
            index: j.index,
            name: j.name,
            needs: j.needs,
            status: j.status,
            outcomeClass: d.job_classes[j.id] ?? null,
            href: `/orgs/${org}/runs/${r.id}/jobs/${j.id}`,
            detail: d.waiting[j.id]
              ? "no eligible host"
              : j.reused_from
                ? `reused from run ${j.reused_from.run_id.slice(0, 8)}`
                : j.flaky
                  ? "flaky"
                  : j.attempts.length > 1
                    ? `${j.attempts.length} attempts`
                    : queueDetail(j.queue),
          }))}
        />
        {r.jobs.length === 0 ? (
          <p className="text-sm text-zinc-500 dark:text-zinc-400">
            {r.status === "pending"
              ? "Waiting for the definition to freeze…"
              : "This run has no jobs (its definition never froze)."}
          </p>
        ) : null}
        <WaitingJobs data={d} now={now} />
      </Card>
      <Card title="Attempts and phases" id="attempts">
        <JobDetails data={d} now={now} />
      </Card>
      <div className="grid gap-6 lg:grid-cols-2">
        <Card title="Definition" id="definition">
          <DefinitionFacts data={d} />
        </Card>
        <Card title="Artifacts" id="artifacts">
          <ArtifactsList data={d} org={org} />
        </Card>
        <Card title="Caches" id="caches">
          <CachesList data={d} />
        </Card>
        <Card title="Forge statuses" id="forge-statuses">
          <ForgeStatuses data={d} now={now} />
        </Card>
        <Card title="Transition history" id="history">
          <RunHistory org={org} runId={r.id} />
        </Card>
      </div>
    </div>
  );
}

function RunHeader({ org, d, now }: { org: string; d: RunPageData; now: number }) {
  const r = d.run;
  return (
    <div className="flex flex-wrap items-start justify-between gap-4">
      <div className="space-y-1.5">
        <nav aria-label="Breadcrumb" className="text-sm text-zinc-500 dark:text-zinc-400">
          <Link href={`/orgs/${org}/runs`} className="hover:underline">
            Runs
          </Link>{" "}
          / <span className="font-mono">{r.id.slice(0, 8)}</span>
        </nav>
        <h1 className="flex flex-wrap items-center gap-3 text-xl font-semibold tracking-tight">
          {d.repo_name}
          {r.ref ? <span className="font-mono text-base font-normal text-zinc-500">{shortRef(r.ref)}</span> : null}
          <StatusBadge status={r.status} outcomeClass={d.outcome_class} className="text-sm" />
        </h1>
        <p className="text-sm text-zinc-600 dark:text-zinc-400" data-testid="run-summary">
          <span className="font-mono">{shortSha(r.commit_sha)}</span> · {r.trigger.replace("_", " ")}
          {r.actor ? ` by ${r.actor}` : ""} · created <RelativeTime iso={r.created_at} now={now} /> · took{" "}
          <Elapsed from={r.created_at} to={r.finished_at} now={now} />
          {r.cause && r.outcome !== "success" ? (
            <>
              {" "}
              · <code className="text-xs">{r.cause}</code>
            </>
          ) : null}
        </p>
        {r.parent_run_id ? (
          <p className="text-sm">
            {r.trigger === "rerun_failed" ? "Re-run of the failed jobs of" : "Retry of"}{" "}
            <Link
              className="font-mono text-blue-700 hover:underline dark:text-blue-400"
              href={`/orgs/${org}/runs/${r.parent_run_id}`}
            >
              {r.parent_run_id.slice(0, 8)}
            </Link>
          </p>
        ) : null}
        {d.retries.length ? (
          <p className="text-sm">
            Retried as{" "}
            {d.retries.map((x, i) => (
              <span key={x.id}>
                {i ? ", " : ""}
                <Link
                  className="font-mono text-blue-700 hover:underline dark:text-blue-400"
                  href={`/orgs/${org}/runs/${x.id}`}
                >
                  {x.id.slice(0, 8)}
                </Link>
              </span>
            ))}
          </p>
        ) : null}
      </div>
      <RunActions data={d} />
    </div>
  );
}
