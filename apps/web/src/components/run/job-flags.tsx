"use client";
import Link from "next/link";
import { useOrg } from "../org-context.tsx";

/** "reused from run X": a job a re-run pinned, linked to the run whose success it carries (issue 20). */
export function ReusedFrom({ from }: { from: { run_id: string; job_id: string } | null }) {
  const { slug } = useOrg();
  if (!from) return null;
  return (
    <span className="text-xs text-zinc-600 dark:text-zinc-400" data-testid="reused-from">
      reused from run{" "}
      <Link
        href={`/orgs/${slug}/runs/${from.run_id}/jobs/${from.job_id}`}
        className="font-mono text-blue-700 hover:underline focus-visible:outline-2 focus-visible:outline-blue-600 dark:text-blue-400"
      >
        {from.run_id.slice(0, 8)}
      </Link>
    </span>
  );
}

/**
 * Passed and failed at this commit and definition. Information only: Kiln never quarantines a job
 * (seed 002); the link goes to the repo's list of flaky jobs.
 */
export function FlakyBadge({ flaky, repoId }: { flaky: boolean; repoId: string }) {
  const { slug } = useOrg();
  if (!flaky) return null;
  return (
    <Link
      href={`/orgs/${slug}/flaky?repo=${repoId}`}
      title="This job both passed and failed at this commit and definition"
      data-testid="flaky-badge"
      className="rounded-full bg-amber-100 px-2 py-0.5 text-xs font-medium text-amber-900 hover:underline focus-visible:outline-2 focus-visible:outline-blue-600 dark:bg-amber-900/40 dark:text-amber-200"
    >
      flaky
    </Link>
  );
}
