"use client";
import { Card, LogExcerpt, StatusBadge } from "@kiln/ui";
import Link from "next/link";
import { useOrg } from "../org-context.tsx";
import type { RunPageData } from "../types.ts";

/**
 * What made the run red, in one place: which job, which step, whose fault, and the log around it.
 * The log excerpt (issue 20) is the region around the first error line, streamed from
 * GET /v1/jobs/{id}/logs/events and numbered like the job page's log view it links into.
 */
export function FirstFailureCard({ data }: { data: RunPageData }) {
  const { slug } = useOrg();
  const f = data.first_failure;
  if (!f) return null;
  const cls = data.job_classes[f.job_id] ?? null;
  const jobHref = `/orgs/${slug}/runs/${data.run.id}/jobs/${f.job_id}`;
  return (
    <Card title="First failure" id="first-failure" className="border-red-200 dark:border-red-900">
      <div className="space-y-3" data-testid="first-failure">
        <p className="flex flex-wrap items-center gap-2 text-sm">
          <StatusBadge status="completed" outcomeClass={cls} />
          <span>
            Job{" "}
            <Link href={jobHref} className="font-medium text-blue-700 hover:underline dark:text-blue-400">
              {f.job_name}
            </Link>
            {f.step_number ? (
              <>
                {" "}
                failed in step {f.step_number}
                {f.step_command ? (
                  <>
                    : <code className="rounded bg-zinc-100 px-1 py-0.5 text-xs dark:bg-zinc-800">{f.step_command}</code>
                  </>
                ) : null}
              </>
            ) : null}
          </span>
        </p>
        <dl className="grid grid-cols-[max-content_1fr] gap-x-4 gap-y-1 text-sm">
          <dt className="text-zinc-500 dark:text-zinc-400">Cause</dt>
          <dd>
            <code className="text-xs">{f.cause ?? "unknown"}</code>
          </dd>
          {f.cause_message ? (
            <>
              <dt className="text-zinc-500 dark:text-zinc-400">Message</dt>
              <dd>{f.cause_message}</dd>
            </>
          ) : null}
          {f.exit_code !== null ? (
            <>
              <dt className="text-zinc-500 dark:text-zinc-400">Exit code</dt>
              <dd className="font-mono">{f.exit_code}</dd>
            </>
          ) : null}
          <dt className="text-zinc-500 dark:text-zinc-400">Whose problem</dt>
          <dd>
            {cls === "platform"
              ? "The platform's: Kiln retries platform failures automatically up to its budget; this one ran out."
              : cls === "your_code"
                ? "Your code or workflow: the step ran and failed."
                : cls === "timed_out"
                  ? "The job ran past its timeout."
                  : cls === "policy"
                    ? "A policy refused the job."
                    : "The run was cancelled."}
          </dd>
        </dl>
        <section aria-label="Log around the first error" data-slot="first-error-log">
          <h3 className="mb-1.5 text-xs font-medium uppercase tracking-wide text-zinc-500 dark:text-zinc-400">
            Log around the first error
          </h3>
          <LogExcerpt
            key={f.job_id}
            eventsUrl={`/v1/jobs/${f.job_id}/logs/events`}
            lineHref={(n) => `${jobHref}#L${n}`}
            label={`${f.job_name}: log around the first error`}
          />
          <p className="mt-1 text-xs text-zinc-500 dark:text-zinc-400">
            The lines around the first line that looks like an error, else the end of the log; each number opens that
            line in the{" "}
            <Link href={jobHref} className="text-blue-700 hover:underline dark:text-blue-400">
              full log
            </Link>
            .
          </p>
        </section>
      </div>
    </Card>
  );
}
