import type { Db } from "@kiln/db";
import { DEFAULT_RUNNER_SIZE, DomainError, type TrustClass, type WorkflowDefinition } from "@kiln/domain";
import type { EngineConfig } from "../config/index.ts";
import { egressPolicy, egressPolicyForAttempt } from "../egress/index.ts";
import { signJobToken, type SigningKey } from "../identity/index.ts";
import type { Claimed, JobTicket } from "./claim-types.ts";

/** The ticket's job block, from the frozen definition's job and the run's env. */
function ticketJob(
  def: WorkflowDefinition["jobs"][number],
  name: string,
  index: number,
  runEnv: Record<string, string> | null | undefined,
): JobTicket["job"] {
  return {
    name,
    index,
    image: def.image?.ref ?? null,
    imageDigest: def.image?.digest ?? null,
    steps: def.steps,
    env: { ...runEnv, ...def.env },
    timeoutMinutes: def.timeoutMinutes,
    size: def.runsOn?.size ?? DEFAULT_RUNNER_SIZE,
    artifacts: def.artifacts,
    cache: def.cache ?? null,
    // Definitions frozen before issue 16 have neither field.
    secrets: def.secrets ?? [],
    secretsRequired: def.secretsRequired ?? false,
  };
}

/** The ticket of a fresh claim, built from what the claim transaction returned (no read after it). */
export function ticketFrom(cfg: EngineConfig, key: SigningKey, a: Claimed): JobTicket {
  const def = a.jobDef;
  if (!def) throw new Error(`definition has no job ${a.jobIndex}`);
  return {
    runId: a.runId,
    jobId: a.jobId,
    attemptId: a.attemptId,
    orgId: a.orgId,
    epoch: a.epoch,
    jobToken: signJobToken(key, { jobId: a.jobId, attemptId: a.attemptId, epoch: a.epoch }),
    leaseExpiresAt: a.leaseExpiresAt.toISOString(),
    leaseTtlMs: cfg.leaseTtlMs,
    heartbeatMs: cfg.heartbeatMs,
    trustClass: a.trustClass,
    egress: egressPolicy({ trustClass: a.trustClass, allowList: a.allowList }),
    source: { cloneUrl: a.cloneUrl, commitSha: a.commitSha },
    job: ticketJob(def, a.name, a.jobIndex, a.runEnv),
  };
}

/** A ticket read back from the database: a retried claim (same claim_request_id) gets its original one. */
export async function loadTicket(db: Db, cfg: EngineConfig, key: SigningKey, attemptId: string): Promise<JobTicket> {
  const rows = await db.$queryRaw<
    {
      id: string;
      job_id: string;
      run_id: string;
      org_id: string;
      epoch: number;
      lease_expires_at: Date;
      job_index: number;
      name: string;
      definition: WorkflowDefinition;
      trust_class: TrustClass;
      clone_url: string;
      commit_sha: string;
    }[]
  >`
    SELECT a.id, a.job_id, a.run_id, a.org_id, a.epoch, a.lease_expires_at, j.job_index, j.name, r.definition, r.trust_class,
           rp.clone_url, r.commit_sha
    FROM attempt a JOIN job_run j ON j.id = a.job_id JOIN workflow_run r ON r.id = a.run_id JOIN repo rp ON rp.id = r.repo_id
    WHERE a.id = ${attemptId}::uuid`;
  const a = rows[0];
  if (!a) throw new DomainError("ATTEMPT.NOT_FOUND", "attempt vanished");
  const def = a.definition.jobs[a.job_index];
  if (!def) throw new Error(`definition has no job ${a.job_index}`);
  return {
    runId: a.run_id,
    jobId: a.job_id,
    attemptId: a.id,
    orgId: a.org_id,
    epoch: a.epoch,
    jobToken: signJobToken(key, { jobId: a.job_id, attemptId: a.id, epoch: a.epoch }),
    leaseExpiresAt: a.lease_expires_at.toISOString(),
    leaseTtlMs: cfg.leaseTtlMs,
    heartbeatMs: cfg.heartbeatMs,
    trustClass: a.trust_class,
    egress: await egressPolicyForAttempt(db, { orgId: a.org_id, trustClass: a.trust_class }),
    source: { cloneUrl: a.clone_url, commitSha: a.commit_sha },
    job: ticketJob(def, a.name, a.job_index, a.definition.env),
  };
}
