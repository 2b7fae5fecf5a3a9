import type { Db } from "@kiln/db";
import {
  attestationStateOf,
  classifyOutcome,
  isOutcome,
  type AttestationState,
  type OutcomeClass,
  type WorkflowDefinition,
} from "@kiln/domain";
import { placementReasonsForRun } from "../../dispatch/index.ts";
import type { EngineConfig } from "../../config/index.ts";
import { getRun, type RunView } from "../../runs/index.ts";
import { orgCacheFigures, runCacheFigures, type JobCacheFigures, type OrgCacheFigures } from "../../caches/index.ts";
import type { TenantScope } from "../tenants/resolve-tenant.ts";
import { findFirstFailure, type FirstFailure } from "./first-failure.ts";

export interface ArtifactView {
  /** The artifact's id (its sealed generation): /v1/artifacts/{id}/download and /attestation (issues 17, 19). */
  id: string;
  job_id: string;
  name: string;
  size_bytes: number | null;
  sha256: string | null;
  state: string;
  sealed_at: string | null;
  /** Issue 17: pending (signing), logged, verified or quarantined, and where to read the record. */
  attestation_state: AttestationState;
  attestation_id: string | null;
  quarantine_reason: string | null;
  /** The run that produced it when the job was pinned by a re-run ("reused from run X"). */
  reused_from_run_id: string | null;
  /** Issue 21: release | default_branch | other, written at seal time; null for older artifacts. */
  retention_class: string | null;
  expires_at: string | null;
  /** Set once retention evicted it (downloads answer 410). */
  expired_at: string | null;
  /** An active retention hold keeps it past expires_at. */
  held: boolean;
}

export interface JobStepsView {
  steps: { name: string | null; command: string }[];
  timeout_minutes: number;
  image: string | null;
}

/** The API's RunView (from the same getRun use case), plus what only the dashboard shows. */
export interface RunPageView {
  run: RunView;
  repo_name: string;
  outcome_class: OutcomeClass | null;
  /** Keyed by job id. */
  job_classes: Record<string, OutcomeClass | null>;
  job_steps: Record<string, JobStepsView>;
  artifacts: ArtifactView[];
  /** Build caches (issue 8): per job of this run (latest reporting attempt), per trust class of the org (30 days). */
  caches: JobCacheFigures[];
  cache_org: OrgCacheFigures[];
  first_failure: FirstFailure | null;
  /** The run's own retry children, newest first, so a red run links to its re-runs. */
  retries: { id: string; status: string; outcome: string | null; created_at: string }[];
  /** Keyed by job id: READY jobs no connected host may take, and why (issue 15 placement). */
  waiting: Record<string, { code: string; message: string }>;
}

const cls = (o: string | null): OutcomeClass | null => (o !== null && isOutcome(o) ? classifyOutcome(o) : null);

/**
 * The run page. The run and its jobs and attempts come from getRun, exactly what
 * GET /v1/workflow-runs/{id} returns; the extras are read in parallel and every one is scoped by
 * org_id in its own WHERE clause, so a run id from another org yields RUN.NOT_FOUND from getRun and
 * empty extras, never another tenant's rows.
 */
export async function getRunPage(
  db: Db,
  scope: TenantScope,
  /** With `cfg`, waiting jobs carry their queue position, reason and estimated start (getRun's `queue`). */
  input: { runId: string; cfg?: EngineConfig },
): Promise<RunPageView> {
  const [run, meta, artifacts, retries, caches, cacheOrg, waiting] = await Promise.all([
    getRun(db, { orgId: scope.orgId, runId: input.runId, ...(input.cfg ? { cfg: input.cfg } : {}) }),
    db.$queryRaw<{ repo_name: string; definition: WorkflowDefinition | null }[]>`
      SELECT repo.full_name AS repo_name, r.definition
      FROM workflow_run r JOIN repo ON repo.id = r.repo_id
      WHERE r.id = ${input.runId}::uuid AND r.org_id = ${scope.orgId}::uuid`,
    db.$queryRaw<
      (Omit<ArtifactView, "sealed_at" | "size_bytes" | "attestation_state" | "expires_at" | "expired_at"> & {
        expires_at: Date | null;
        expired_at: Date | null;
        sealed_at: Date | null;
        size_bytes: bigint | null;
        att_state: "logged" | "verified" | "mismatch" | null;
      })[]
    >`
      SELECT g.id, j.id AS job_id, b.name, g.size_bytes, g.sha256, g.state, g.sealed_at, j.reused_from_run_id,
             s.attestation_id, a.state AS att_state, q.reason AS quarantine_reason,
             g.retention_class, g.expires_at, g.expired_at,
             EXISTS (SELECT 1 FROM retention_hold h WHERE h.generation_id = g.id AND h.removed_at IS NULL) AS held
      FROM job_run j
      JOIN artifact_binding b ON b.job_id = COALESCE(j.reused_from_job_id, j.id)
      JOIN artifact_generation g ON g.id = b.generation_id
      LEFT JOIN attestation_subject s ON s.generation_id = g.id
      LEFT JOIN attestation a ON a.id = s.attestation_id AND a.org_id = ${scope.orgId}::uuid
      LEFT JOIN artifact_quarantine q ON q.generation_id = g.id
      WHERE j.run_id = ${input.runId}::uuid AND j.org_id = ${scope.orgId}::uuid
      ORDER BY j.job_index, b.name`,
    db.$queryRaw<{ id: string; status: string; outcome: string | null; created_at: Date }[]>`
      SELECT id, status, outcome, created_at FROM workflow_run
      WHERE parent_run_id = ${input.runId}::uuid AND org_id = ${scope.orgId}::uuid
        -- A retry is always newer than its parent: bounds the (org_id, created_at) index scan.
        AND created_at >= (SELECT p.created_at FROM workflow_run p WHERE p.id = ${input.runId}::uuid AND p.org_id = ${scope.orgId}::uuid)
      ORDER BY created_at DESC LIMIT 10`,
    runCacheFigures(db, { orgId: scope.orgId, runId: input.runId }),
    orgCacheFigures(db, { orgId: scope.orgId, sinceDays: 30 }),
    placementReasonsForRun(db, input.runId, scope.orgId),
  ]);
  const definition = meta[0]?.definition ?? null;
  const stepsByIndex = new Map((definition?.jobs ?? []).map((j) => [j.index, j.steps]));
  const jobSteps: Record<string, JobStepsView> = {};
  for (const j of run.jobs) {
    const d = definition?.jobs.find((x) => x.index === j.index);
    jobSteps[j.id] = {
      steps: (d?.steps ?? []).map((command, i) => ({ name: d?.stepNames[i] ?? null, command })),
      timeout_minutes: d?.timeoutMinutes ?? 0,
      image: d?.image?.ref ?? null,
    };
  }
  return {
    run,
    repo_name: meta[0]?.repo_name ?? "",
    outcome_class: cls(run.outcome),
    job_classes: Object.fromEntries(run.jobs.map((j) => [j.id, cls(j.outcome)])),
    job_steps: jobSteps,
    artifacts: artifacts.map(({ att_state, ...a }) => ({
      ...a,
      attestation_state: attestationStateOf({
        jobSucceeded: true,
        attestation: att_state,
        quarantined: a.quarantine_reason !== null,
      }),
      size_bytes: a.size_bytes === null ? null : Number(a.size_bytes),
      sealed_at: a.sealed_at ? a.sealed_at.toISOString() : null,
      expires_at: a.expires_at ? a.expires_at.toISOString() : null,
      expired_at: a.expired_at ? a.expired_at.toISOString() : null,
    })),
    caches,
    cache_org: cacheOrg,
    first_failure: findFirstFailure(run.jobs, stepsByIndex),
    retries: retries.map((r) => ({ ...r, created_at: r.created_at.toISOString() })),
    waiting: Object.fromEntries(waiting),
  };
}
