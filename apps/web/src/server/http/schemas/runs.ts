import { OUTCOMES, type OutcomeClass, RETENTION_CLASSES, RUN_STATUSES, RUN_TRIGGERS } from "@kiln/domain";
import { z } from "zod";

// Wire schemas of the public API's run resources (docs/adr/0029). They describe what the engine's
// views answer; e2e/public-api.test.ts parses real answers with them, so they cannot drift silently.

const iso = z.string().describe("ISO 8601 timestamp");
const outcome = z.enum(OUTCOMES);
// Mirrors OutcomeClass (@kiln/domain); the satisfies below fails to compile when they part.
const OUTCOME_CLASSES = [
  "ok",
  "your_code",
  "platform",
  "cancelled",
  "timed_out",
  "policy",
] as const satisfies readonly OutcomeClass[];

const runSummary = z.object({
  id: z.uuid(),
  repo_id: z.uuid(),
  repo_name: z.string(),
  status: z.enum(RUN_STATUSES),
  outcome: outcome.nullable(),
  outcome_class: z.enum(OUTCOME_CLASSES).nullable(),
  cause: z.string().nullable(),
  trigger: z.enum(RUN_TRIGGERS).describe("the event that started the run"),
  actor: z.string().nullable(),
  ref: z.string().nullable(),
  commit_sha: z.string(),
  parent_run_id: z.uuid().nullable(),
  created_at: iso,
  finished_at: iso.nullable(),
  jobs_total: z.number().int(),
  jobs_done: z.number().int(),
});

export const runListQuery = z.object({
  branch: z
    .string()
    .min(1)
    .max(255)
    .refine((b) => !b.startsWith("refs/"), "a branch name without refs/heads/")
    .optional()
    .describe("a branch name: pushes and manual runs on refs/heads/<branch>, pull requests from it"),
  event: z.enum(RUN_TRIGGERS).optional().describe("what started the run"),
  outcome: outcome.optional(),
  status: z.enum(RUN_STATUSES).optional(),
  created_before: z.iso.datetime({ offset: true }).optional().describe("runs created strictly before this instant"),
  created_after: z.iso.datetime({ offset: true }).optional().describe("runs created at or after this instant"),
  cursor: z.string().min(1).max(200).optional().describe("next_cursor of the previous page"),
  per_page: z.coerce.number().int().min(1).max(100).default(25),
});

export const runListPage = z.object({
  workflow_runs: z.array(runSummary),
  next_cursor: z.string().nullable().describe("pass as cursor for the next, older page; null on the last page"),
});

const queueInfo = z.object({
  position: z.number().int().nullable(),
  estimated_start_at: iso.nullable(),
  reason: z.enum([
    "ready",
    "org_cap",
    "no_capacity",
    "waiting_for_predecessor",
    "backoff",
    "no_eligible_host",
    // Issue 33 (docs/adr/0045): the org used this month's minutes; the job starts when that changes.
    "quota.minutes_exhausted",
  ]),
  waiting: z.object({ code: z.string(), message: z.string() }).optional(),
});

const attempt = z.object({
  epoch: z.number().int(),
  status: z.string(),
  outcome: z.string().nullable(),
  cause: z.string().nullable(),
  cause_message: z.string().nullable(),
  host: z.string(),
  exit_code: z.number().int().nullable(),
  started_at: iso.nullable(),
  finished_at: iso.nullable(),
  phases: z.object({
    queued_ms: z.number().nullable(),
    image_preparation_ms: z.number().nullable(),
    dispatch_ms: z.number().nullable(),
    execution_ms: z.number().nullable(),
    artifact_finalization_ms: z.number().nullable(),
  }),
  log: z
    .object({
      retention_class: z
        .enum(RETENTION_CLASSES)
        .nullable()
        .describe("release, default_branch, other; null until archived"),
      expires_at: iso.nullable().describe("when retention evicts this log"),
      expired_at: iso.nullable().describe("set once evicted: reads answer 410 LOG.EXPIRED"),
    })
    .describe("the attempt's log under retention (issue 21)"),
});

const job = z.object({
  id: z.uuid(),
  name: z.string(),
  index: z.number().int(),
  needs: z.array(z.string()),
  status: z.string(),
  outcome: z.string().nullable(),
  cause: z.string().nullable(),
  cause_message: z.string().nullable(),
  tier: z.string(),
  matrix: z.record(z.string(), z.string()).nullable().describe("a matrix expansion's values; null for a plain job"),
  reused_from: z
    .object({ run_id: z.uuid(), job_id: z.uuid() })
    .nullable()
    .describe("set when a re-run pinned this job: the run and job whose success and artifacts it reuses"),
  flaky: z.boolean().describe("passed and failed at this commit and definition; never acted on"),
  queue: queueInfo.nullable(),
  attempts: z.array(attempt),
});

const forgeStatus = z.object({
  context: z.string().describe("kiln/<workflow path> for the run, kiln/<workflow path>/<job> per job"),
  job_id: z.uuid().nullable(),
  state: z.string().describe("what Kiln wants the forge to show"),
  description: z.string(),
  delivered_state: z.string().nullable().describe("what the forge was last told; null: nothing yet"),
  delivered_at: iso.nullable(),
  delivery: z.enum(["delivered", "pending"]),
  attempts: z.number().int(),
  last_http_status: z.number().int().nullable(),
  last_error: z.string().nullable(),
  next_attempt_at: iso.nullable(),
  check_run_id: z.number().int().nullable(),
});

export const run = z.object({
  id: z.uuid(),
  repo_id: z.uuid(),
  status: z.string(),
  outcome: z.string().nullable(),
  cause: z.string().nullable(),
  cause_message: z.string().nullable(),
  trust_class: z.string(),
  commit_sha: z.string(),
  ref: z.string().nullable().describe("refs/heads/x, refs/tags/x, or a pull request's refs/pull/<n>/head"),
  head_ref: z
    .string()
    .nullable()
    .describe("a pull request's head branch as the forge named it (issue 28); nothing is decided on it"),
  workflow_path: z.string(),
  workflow_hash: z.string().nullable(),
  trigger: z.string(),
  actor: z.string().nullable(),
  parent_run_id: z.uuid().nullable(),
  created_at: iso,
  started_at: iso.nullable(),
  finished_at: iso.nullable(),
  jobs: z.array(job),
  forge_statuses: z.array(forgeStatus).describe("commit statuses for this run on the forge (issue 19)"),
});

export const jobList = z.object({ run_id: z.uuid(), jobs: z.array(job) });

export const runCreated = z.object({ run_id: z.uuid() });
export const runCancelled = z.object({ run_id: z.uuid(), status: z.string(), cancel_version: z.number().int() });
export const runRetried = z.object({ run_id: z.uuid(), parent_run_id: z.uuid() });

export const runEgress = z.object({
  run_id: z.uuid(),
  events: z.array(
    z.object({
      job_id: z.uuid(),
      job_name: z.string(),
      attempt: z.number().int(),
      host: z.string(),
      port: z.number().int(),
      decision: z.string(),
      reason: z.string(),
      count: z.number().int(),
      at: iso,
    }),
  ),
});

// Issue 20 (another branch's routes, documented here at merge: docs/adr/0029).
export const runRerun = z.object({
  run_id: z.uuid(),
  parent_run_id: z.uuid(),
  pinned: z.array(z.object({ name: z.string(), reused_from: z.object({ run_id: z.uuid(), job_id: z.uuid() }) })),
  rerun: z.array(z.string()),
});

export const flakyJobs = z.object({
  flaky_jobs: z.array(
    z.object({
      name: z.string(),
      matrix: z.record(z.string(), z.string()).nullable(),
      commits: z.number().int(),
      attempts: z.number().int(),
      last_seen: iso,
      last_commit_sha: z.string(),
      last_run_id: z.uuid(),
    }),
  ),
});
