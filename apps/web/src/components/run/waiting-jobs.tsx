import { RelativeTime } from "../time.tsx";
import type { JobData, RunPageData } from "../types.ts";

// Waiting jobs on the run page (issue 20): queue position, reason and estimated start, as the API
// computes them (getRun's `queue`, from the scheduler that orders claims). The page polls every
// 2 s while the run is live, so these move as the queue does.

type Queue = NonNullable<JobData["queue"]>;

const REASONS: Record<Queue["reason"], string> = {
  ready: "next to start: the pool picks it at the next free slot",
  org_cap: "your org is at its concurrency cap in this pool",
  no_capacity: "waiting for a free slot in the pool",
  waiting_for_predecessor: "waiting for the jobs it needs",
  backoff: "retrying after a backoff",
  no_eligible_host: "no connected host can run it",
  "quota.minutes_exhausted": "the org has used this month's minutes",
};

function waitingReason(q: Queue): string {
  return q.waiting?.message ?? REASONS[q.reason];
}

/** A short form for the job graph's node. */
export function queueDetail(q: Queue | null): string | undefined {
  if (!q) return undefined;
  if (q.reason === "no_eligible_host") return "no eligible host";
  if (q.reason === "quota.minutes_exhausted") return "out of minutes";
  return q.position !== null ? `#${q.position} in queue` : undefined;
}

export function WaitingJobs({ data, now }: { data: RunPageData; now: number }) {
  const waiting = data.run.jobs.filter((j) => j.queue !== null && j.status !== "pending");
  if (waiting.length === 0) return null;
  return (
    <table className="w-full text-left text-sm" data-testid="waiting-jobs" aria-label="Waiting jobs">
      <thead className="text-xs uppercase tracking-wide text-zinc-500 dark:text-zinc-400">
        <tr>
          <th scope="col" className="py-1.5 pr-4 font-medium">
            Job
          </th>
          <th scope="col" className="py-1.5 pr-4 font-medium">
            Position
          </th>
          <th scope="col" className="py-1.5 pr-4 font-medium">
            Why it waits
          </th>
          <th scope="col" className="py-1.5 font-medium">
            Estimated start
          </th>
        </tr>
      </thead>
      <tbody>
        {waiting.map((j) => {
          const q = j.queue as Queue;
          return (
            <tr key={j.id} className="border-t border-zinc-100 dark:border-zinc-800" data-testid={`waiting-${j.name}`}>
              <td className="py-1.5 pr-4 font-medium">{j.name}</td>
              <td className="py-1.5 pr-4 tabular-nums" data-testid="queue-position">
                {q.position !== null ? `#${q.position}` : "—"}
              </td>
              <td className="py-1.5 pr-4" data-testid="queue-reason">
                {waitingReason(q)}
                {q.waiting ? <code className="ml-2 text-xs text-zinc-500">{q.waiting.code}</code> : null}
              </td>
              <td className="py-1.5" data-testid="queue-eta">
                {q.estimated_start_at ? <RelativeTime iso={q.estimated_start_at} now={now} /> : "not foreseeable"}
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}
