import type { Db } from "@kiln/db";
import {
  clip,
  forgeStatusOf,
  isOutcome,
  jobContext,
  runContext,
  UPSTREAM_FAILED_CAUSE,
  type StatusSubject,
} from "@kiln/domain";
import type { ForgeConfig } from "./forge-config.ts";
import { minuteQuotaStatus, quotaStatusText } from "../metering/index.ts";

// What the forge should show for a run right now, written to forge_status. Computed from the
// current rows at delivery time, never from the event that asked for it: an outbox message is only
// "something changed", so a late or repeated one cannot carry a stale state. The sequence is the
// newest transition_event id of the run (or job): the ordered log, so newer always compares higher.

interface RunRow {
  id: string;
  org_id: string;
  org_slug: string;
  repo_id: string;
  commit_sha: string;
  workflow_path: string;
  status: string;
  outcome: string | null;
  cause: string | null;
  cause_message: string | null;
  seq: bigint | null;
}
interface JobRow {
  id: string;
  name: string;
  job_index: number;
  status: string;
  outcome: string | null;
  cause: string | null;
  cause_message: string | null;
  platform_retries: number;
  seq: bigint | null;
}

export interface DesiredStatus {
  context: string;
  jobId: string | null;
  seq: bigint;
  state: string;
  description: string;
  targetUrl: string | null;
  /** The check run's output summary (App only): the first failure, in the run page's words. */
  summary: string;
}

const subject = (
  r: { status: string; outcome: string | null; cause: string | null; cause_message: string | null },
  retries: number,
): StatusSubject => ({
  status: r.status,
  outcome: r.outcome !== null && isOutcome(r.outcome) ? r.outcome : null,
  cause: r.cause,
  causeMessage: r.cause_message,
  platformRetries: retries,
});

export async function computeDesiredStatuses(
  db: Db,
  cfg: Pick<ForgeConfig, "publicUrl">,
  runId: string,
): Promise<{ run: RunRow; statuses: DesiredStatus[] } | null> {
  const runs = await db.$queryRaw<RunRow[]>`
    SELECT r.id, r.org_id, o.slug AS org_slug, r.repo_id, r.commit_sha, r.workflow_path, r.status, r.outcome, r.cause, r.cause_message,
           (SELECT max(e.id) FROM transition_event e WHERE e.run_id = r.id AND e.entity = 'run') AS seq
    FROM workflow_run r JOIN org o ON o.id = r.org_id WHERE r.id = ${runId}::uuid`;
  const run = runs[0];
  if (!run?.seq) return null;
  const jobs = await db.$queryRaw<JobRow[]>`
    SELECT j.id, j.name, j.job_index, j.status, j.outcome, j.cause, j.cause_message,
           (SELECT count(*)::int FROM attempt a WHERE a.job_id = j.id AND a.outcome = 'platform_failure') AS platform_retries,
           (SELECT max(e.id) FROM transition_event e WHERE e.run_id = j.run_id AND e.job_id = j.id AND e.entity = 'job') AS seq
    FROM job_run j WHERE j.run_id = ${runId}::uuid ORDER BY j.job_index`;
  const base = cfg.publicUrl ? cfg.publicUrl.replace(/\/+$/, "") : null;
  const runUrl = base ? `${base}/orgs/${run.org_slug}/runs/${run.id}` : null;
  const retries = jobs.reduce((n, j) => n + (j.outcome === "success" ? j.platform_retries : 0), 0);
  const summary = firstFailureSummary(run, jobs);
  // The run's cause is its first failing job's; the message names that job (the run row has none).
  const first = jobs.find((j) => j.outcome !== null && j.outcome !== "success" && j.cause !== UPSTREAM_FAILED_CAUSE);
  const runSubject = {
    ...run,
    cause_message:
      run.cause_message ??
      (first?.cause_message ? `${first.name}: ${first.cause_message}` : first ? `job ${first.name}` : null),
  };
  const own = forgeStatusOf(subject(runSubject, run.outcome === "success" ? retries : 0));
  const statuses: DesiredStatus[] = [
    { context: runContext(run.workflow_path), jobId: null, seq: run.seq, ...own, targetUrl: runUrl, summary },
  ];
  for (const j of jobs) {
    // A job's row has its creation event (the freeze's "ready" or none for a job that waits): fall
    // back to the run's sequence so a waiting job's pending is still ordered.
    const seq = j.seq ?? run.seq;
    const s = forgeStatusOf(subject(j, j.outcome === "success" ? j.platform_retries : 0));
    statuses.push({
      context: jobContext(run.workflow_path, j.name),
      jobId: j.id,
      seq,
      ...s,
      targetUrl: runUrl ? `${runUrl}/jobs/${j.id}` : null,
      summary: j.outcome && j.outcome !== "success" ? clip(`${s.description}`, 1000) : s.description,
    });
  }
  // Minute quota (ADR 0045): a pending status says when the org is at 80% or out of minutes, so the
  // forge shows why a job has not started; finished statuses are left as they are.
  const quota = run.status === "completed" ? null : quotaStatusText(await minuteQuotaStatus(db, run.org_id));
  if (quota)
    for (const st of statuses) if (st.state === "pending") st.description = clip(`${st.description} · ${quota}`);
  return { run, statuses };
}

/** Same rule as the run page's first failure: the lowest-index job that failed on its own. */
function firstFailureSummary(run: RunRow, jobs: JobRow[]): string {
  if (run.status !== "completed") return "Kiln is running this workflow.";
  if (run.outcome === "success") return "All jobs succeeded.";
  const first = jobs.find((j) => j.outcome !== null && j.outcome !== "success" && j.cause !== UPSTREAM_FAILED_CAUSE);
  if (!first)
    return `The run ended ${run.outcome ?? "without an outcome"}: ${run.cause_message ?? run.cause ?? "no cause recorded"}.`;
  return [
    `First failure: job \`${first.name}\` (${first.outcome}).`,
    first.cause ? `Cause: \`${first.cause}\`.` : "",
    first.cause_message ? `\n\n${first.cause_message}` : "",
  ]
    .filter(Boolean)
    .join(" ")
    .slice(0, 65_000);
}

/**
 * Upserts the desired rows. A row only moves forward: `WHERE desired_seq < EXCLUDED.desired_seq`
 * ignores an older computation (two deliveries racing, or an older run on the same commit).
 */
export async function storeDesiredStatuses(db: Db, run: RunRow, statuses: DesiredStatus[]): Promise<void> {
  const rows = statuses.map((s) => ({
    context: s.context,
    job_id: s.jobId,
    seq: s.seq.toString(),
    state: s.state,
    description: s.description,
    target_url: s.targetUrl,
    summary: s.summary,
  }));
  await db.$executeRaw`
    INSERT INTO forge_status (org_id, repo_id, commit_sha, context, run_id, job_id, desired_seq, state, description, target_url, summary)
    SELECT ${run.org_id}::uuid, ${run.repo_id}::uuid, ${run.commit_sha}, x.context, ${run.id}::uuid, x.job_id, x.seq::bigint,
           x.state, x.description, x.target_url, x.summary
    FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
      AS x(context text, job_id uuid, seq text, state text, description text, target_url text, summary text)
    ON CONFLICT (repo_id, commit_sha, context) DO UPDATE SET
      run_id = EXCLUDED.run_id, job_id = EXCLUDED.job_id, desired_seq = EXCLUDED.desired_seq, state = EXCLUDED.state,
      description = EXCLUDED.description, target_url = EXCLUDED.target_url, summary = EXCLUDED.summary, updated_at = now()
    WHERE forge_status.desired_seq < EXCLUDED.desired_seq`;
}
