"use client";
import { classifyOutcome, isOutcome, type OutcomeClass } from "@kiln/domain";
import { AttemptTimeline, StatusBadge } from "@kiln/ui";
import Link from "next/link";
import { useState } from "react";
import { useOrg } from "../org-context.tsx";
import { Elapsed } from "../time.tsx";
import type { JobData, RunPageData } from "../types.ts";
import { FlakyBadge, ReusedFrom } from "./job-flags.tsx";
import { RetentionFacts } from "./run-facts.tsx";

/** Per job: outcome, cause, steps and the attempt timeline. Native <details> for keyboard use. */
export function JobDetails({ data, now }: { data: RunPageData; now: number }) {
  const { slug } = useOrg();
  const open = (j: JobData) =>
    data.run.jobs.length <= 3 || j.id === data.first_failure?.job_id || j.status === "running";
  return (
    <div className="divide-y divide-zinc-200 dark:divide-zinc-800">
      {data.run.jobs.map((j) => (
        <JobDetail
          key={j.id}
          job={j}
          data={data}
          now={now}
          href={`/orgs/${slug}/runs/${data.run.id}/jobs/${j.id}`}
          initiallyOpen={open(j)}
          slug={slug}
        />
      ))}
    </div>
  );
}

/**
 * One job. The body is rendered only while open: a 50-job run would otherwise server-render every
 * job's timeline and phases (thousands of nodes) that nobody expanded.
 */
function JobDetail({
  job: j,
  data,
  now,
  href,
  initiallyOpen,
  slug,
}: {
  job: JobData;
  data: RunPageData;
  now: number;
  href: string;
  initiallyOpen: boolean;
  slug: string;
}) {
  const [open, setOpen] = useState(initiallyOpen);
  const first = j.attempts[0];
  const last = j.attempts[j.attempts.length - 1];
  const steps = data.job_steps[j.id]?.steps ?? [];
  return (
    <details open={open} onToggle={(e) => setOpen(e.currentTarget.open)} className="group py-2" data-job={j.name}>
      <summary className="flex cursor-pointer list-none flex-wrap items-center gap-2 rounded py-1 focus-visible:outline-2 focus-visible:outline-blue-600">
        <span aria-hidden="true" className="text-zinc-400 transition-transform group-open:rotate-90">
          ▸
        </span>
        <span className="font-medium">{j.name}</span>
        <StatusBadge status={j.status} outcomeClass={data.job_classes[j.id] ?? null} />
        <FlakyBadge flaky={j.flaky} repoId={data.run.repo_id} />
        <ReusedFrom from={j.reused_from} />
        {j.cause && j.outcome !== "success" ? (
          <code className="text-xs text-zinc-500 dark:text-zinc-400">{j.cause}</code>
        ) : null}
        {data.waiting[j.id] ? (
          <span
            className="text-xs text-amber-800 dark:text-amber-300"
            data-testid="waiting-reason"
            title={data.waiting[j.id]?.code}
          >
            {data.waiting[j.id]?.message}
          </span>
        ) : null}
        <span className="ml-auto text-xs text-zinc-500 dark:text-zinc-400">
          {j.attempts.length > 1 ? `${j.attempts.length} attempts · ` : ""}
          <Elapsed
            from={first?.started_at ?? null}
            to={j.status === "completed" ? (last?.finished_at ?? null) : null}
            now={now}
          />
        </span>
      </summary>
      {open ? (
        <div className="space-y-4 pb-2 pl-5 pt-2">
          {j.cause_message && j.outcome !== "success" ? <p className="text-sm">{j.cause_message}</p> : null}
          {j.needs.length ? (
            <p className="text-xs text-zinc-500 dark:text-zinc-400">Needs: {j.needs.join(", ")}</p>
          ) : null}
          {data.job_steps[j.id]?.image ? (
            <p className="text-xs text-zinc-500 dark:text-zinc-400" data-testid="job-image">
              {/* Issue 30: a pool that declared the host as its image says so, on the page as in the provenance. */}
              {data.job_steps[j.id]?.image === "host" ? (
                "Image: host (this pool runs jobs on its hosts' own system directories)"
              ) : (
                <>
                  Image: <code>{data.job_steps[j.id]?.image}</code>
                </>
              )}
            </p>
          ) : null}
          {steps.length ? (
            <ol className="list-inside list-decimal space-y-0.5 text-sm">
              {steps.map((s, i) => (
                <li key={i}>
                  {s.name ? <span className="mr-1.5">{s.name}:</span> : null}
                  <code className="rounded bg-zinc-100 px-1 py-0.5 text-xs dark:bg-zinc-800">{s.command}</code>
                </li>
              ))}
            </ol>
          ) : null}
          {j.reused_from ? (
            <p className="text-sm text-zinc-600 dark:text-zinc-400" data-testid="pinned-note">
              Pinned by this re-run: it reuses the success and artifacts of this job in run{" "}
              <Link
                href={`/orgs/${slug}/runs/${j.reused_from.run_id}/jobs/${j.reused_from.job_id}`}
                className="font-mono text-blue-700 hover:underline dark:text-blue-400"
              >
                {j.reused_from.run_id.slice(0, 8)}
              </Link>
              ; no attempt ran here.
            </p>
          ) : (
            <AttemptTimeline
              now={now}
              attempts={j.attempts.map((a) => ({ ...a, outcomeClass: outcomeClassOf(a.outcome) }))}
            />
          )}
          <Link
            href={href}
            className="inline-block text-sm text-blue-700 hover:underline focus-visible:outline-2 focus-visible:outline-blue-600 dark:text-blue-400"
          >
            View log →
          </Link>
          {last?.log.retention_class ? (
            <p className="text-xs text-zinc-600 dark:text-zinc-400" data-testid="log-retention">
              Log retention:{" "}
              <RetentionFacts
                cls={last.log.retention_class}
                expiresAt={last.log.expires_at}
                expiredAt={last.log.expired_at}
              />
            </p>
          ) : null}
        </div>
      ) : null}
    </details>
  );
}

/** Attempts carry raw outcomes; the class comes from the domain's one mapping. */
function outcomeClassOf(o: string | null): OutcomeClass | null {
  return o !== null && isOutcome(o) ? classifyOutcome(o) : null;
}
