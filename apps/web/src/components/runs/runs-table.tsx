import type { RUN_TRIGGERS } from "@kiln/domain";
import { shortRef, shortSha, StatusBadge } from "@kiln/ui";
import Link from "next/link";
import { Elapsed, RelativeTime } from "../time.tsx";
import type { RunRowData } from "../types.ts";

/** How each run-creating event reads in the list and in its filter (every trigger has a label). */
export const TRIGGER_LABEL: Record<(typeof RUN_TRIGGERS)[number], string> = {
  push: "push",
  pull_request: "pull request",
  manual: "manual",
  retry: "retry",
  rerun_failed: "re-run of failed jobs",
  schedule: "schedule",
  deploy: "deploy",
};
const TRIGGER: Record<string, string> = TRIGGER_LABEL;

/** Runs as a table; the run id is the link, so every row is reachable by keyboard. */
export function RunsTable({ org, runs, now }: { org: string; runs: RunRowData[]; now: number }) {
  return (
    <div className="overflow-x-auto">
      <table className="w-full text-left text-sm" data-testid="runs-table">
        <thead className="text-xs uppercase tracking-wide text-zinc-500 dark:text-zinc-400">
          <tr>
            <th scope="col" className="py-2 pr-4 font-medium">
              Result
            </th>
            <th scope="col" className="py-2 pr-4 font-medium">
              Run
            </th>
            <th scope="col" className="py-2 pr-4 font-medium">
              Repository
            </th>
            <th scope="col" className="py-2 pr-4 font-medium">
              Branch · commit
            </th>
            <th scope="col" className="py-2 pr-4 font-medium">
              Trigger
            </th>
            <th scope="col" className="py-2 pr-4 font-medium">
              Jobs
            </th>
            <th scope="col" className="py-2 pr-4 font-medium">
              Created
            </th>
            <th scope="col" className="py-2 font-medium">
              Took
            </th>
          </tr>
        </thead>
        <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
          {runs.map((r) => (
            <tr key={r.id} data-run-id={r.id}>
              <td className="py-2 pr-4">
                <StatusBadge status={r.status} outcomeClass={r.outcome_class} />
              </td>
              <td className="py-2 pr-4">
                <Link
                  href={`/orgs/${org}/runs/${r.id}`}
                  className="font-mono text-xs font-medium text-blue-700 hover:underline focus-visible:outline-2 focus-visible:outline-blue-600 dark:text-blue-400"
                >
                  {r.id.slice(0, 8)}
                </Link>
                {r.cause && r.outcome !== "success" ? (
                  <div className="text-xs text-zinc-500 dark:text-zinc-400">{r.cause}</div>
                ) : null}
              </td>
              <td className="py-2 pr-4">{r.repo_name}</td>
              <td className="py-2 pr-4 font-mono text-xs">
                {r.ref ? `${shortRef(r.ref)} · ` : ""}
                {shortSha(r.commit_sha)}
              </td>
              <td className="py-2 pr-4">
                {TRIGGER[r.trigger] ?? r.trigger}
                {r.actor ? <span className="text-zinc-500 dark:text-zinc-400"> by {r.actor}</span> : null}
              </td>
              <td className="py-2 pr-4 tabular-nums">
                {r.jobs_done}/{r.jobs_total}
              </td>
              <td className="py-2 pr-4">
                <RelativeTime iso={r.created_at} now={now} />
              </td>
              <td className="py-2">
                <Elapsed from={r.created_at} to={r.finished_at} now={now} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
