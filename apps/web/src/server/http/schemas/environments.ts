import type { EnvironmentView, PolicyVersionView, PromotableArtifact, PromotionView } from "@kiln/engine";
import { FAIL_MODES, PROMOTION_KINDS, PROMOTION_STATES, VERDICTS } from "@kiln/domain";
import { z } from "zod";

// Wire schemas of environments, policies and promotions (issue 18, docs/adr/0032): snake_case like
// the rest of /v1, strict (additionalProperties: false), and the mapping from the engine's views.

const iso = z.string().describe("ISO 8601 timestamp");
const digest = z
  .string()
  .regex(/^[0-9a-f]{64}$/)
  .describe("sha256 of the artifact's bytes (hex)");

export const environment = z.object({
  id: z.uuid(),
  repo_id: z.uuid(),
  repo: z.string(),
  name: z.string(),
  after: z.string().nullable().describe("the previous environment in the promotion order"),
  position: z.number().int(),
  production: z.boolean(),
  fail_mode: z.enum(FAIL_MODES),
  policy_version: z.number().int(),
  pointer: z
    .object({
      artifact_id: z.uuid(),
      digest,
      attestation_id: z.uuid().nullable(),
      promotion_id: z.uuid(),
      moved_at: iso,
      seq: z.string().describe("the move's number in this environment (1, 2, ...)"),
    })
    .nullable()
    .describe("what the environment runs: null until the first promotion"),
  created_at: iso,
});
export const environmentList = z.object({ environments: z.array(environment) });

export function environmentWire(e: EnvironmentView): z.infer<typeof environment> {
  return {
    id: e.id,
    repo_id: e.repoId,
    repo: e.repo,
    name: e.name,
    after: e.after,
    position: e.position,
    production: e.production,
    fail_mode: e.failMode,
    policy_version: e.policyVersion,
    pointer: e.pointer
      ? {
          artifact_id: e.pointer.artifactId,
          digest: e.pointer.digest,
          attestation_id: e.pointer.attestationId,
          promotion_id: e.pointer.promotionId,
          moved_at: e.pointer.movedAt,
          seq: e.pointer.seq,
        }
      : null,
    created_at: e.createdAt,
  };
}

export const policyVersion = z.object({
  environment_id: z.uuid(),
  version: z.number().int(),
  policy: z.record(z.string(), z.unknown()).describe("the gate policy document (docs/adr/0032)"),
  created_by: z.string(),
  comment: z.string().nullable(),
  created_at: iso,
});

export function policyWire(p: PolicyVersionView): z.infer<typeof policyVersion> {
  return {
    environment_id: p.environmentId,
    version: p.version,
    policy: p.policy as Record<string, unknown>,
    created_by: p.createdBy,
    comment: p.comment,
    created_at: p.createdAt,
  };
}

const reason = z.object({
  gate: z
    .string()
    .describe("required_outcomes, provenance, previous_environment, approvals, freeze_windows, allowed_refs, policy"),
  status: z.enum(["pass", "fail", "pending", "unavailable", "skipped", "overridden"]),
  code: z.string().describe("machine-readable, e.g. PROVENANCE.QUARANTINED, GATE.UNAVAILABLE"),
  message: z.string(),
});

export const promotion = z.object({
  id: z.uuid(),
  environment_id: z.uuid(),
  environment: z.string(),
  repo_id: z.uuid(),
  repo: z.string(),
  production: z.boolean(),
  kind: z.enum(PROMOTION_KINDS),
  state: z.enum(PROMOTION_STATES),
  decision: z.object({
    verdict: z.enum(VERDICTS),
    reasons: z.array(reason),
    fail_mode: z.enum(FAIL_MODES),
    policy_version: z.number().int(),
    decided_at: iso,
  }),
  artifact: z.object({
    id: z.uuid(),
    name: z.string(),
    digest,
    run_id: z.uuid(),
    job_id: z.uuid(),
    attestation_id: z.uuid().nullable(),
  }),
  requester: z.object({ login: z.string().nullable(), actor: z.string() }),
  reason: z.string(),
  from_digest: z.string().nullable(),
  approvals: z.array(
    z.object({ login: z.string(), decision: z.enum(["approve", "reject"]), comment: z.string().nullable(), at: iso }),
  ),
  overrides: z.array(
    z.object({
      id: z.uuid(),
      actor: z.string(),
      actor_login: z.string().nullable(),
      reason: z.string(),
      expires_at: iso,
      gates: z.array(z.string()),
      second_approver_required: z.boolean(),
      second_approver: z.string().nullable(),
      state: z.enum(["pending", "applied"]),
      applied_at: iso.nullable(),
      created_at: iso,
    }),
  ),
  promoted_at: iso.nullable(),
  created_at: iso,
});

export function promotionWire(p: PromotionView): z.infer<typeof promotion> {
  return {
    id: p.id,
    environment_id: p.environmentId,
    environment: p.environment,
    repo_id: p.repoId,
    repo: p.repo,
    production: p.production,
    kind: p.kind,
    state: p.state,
    decision: {
      verdict: p.decision.verdict,
      reasons: p.decision.reasons.map((r) => ({ gate: r.gate, status: r.status, code: r.code, message: r.message })),
      fail_mode: p.decision.failMode,
      policy_version: p.decision.policyVersion,
      decided_at: p.decision.decidedAt,
    },
    artifact: {
      id: p.artifact.id,
      name: p.artifact.name,
      digest: p.artifact.digest,
      run_id: p.artifact.runId,
      job_id: p.artifact.jobId,
      attestation_id: p.artifact.attestationId,
    },
    requester: { login: p.requester.login, actor: p.requester.actor },
    reason: p.reason,
    from_digest: p.fromDigest,
    approvals: p.approvals,
    overrides: p.overrides.map((o) => ({
      id: o.id,
      actor: o.actor,
      actor_login: o.actorLogin,
      reason: o.reason,
      expires_at: o.expiresAt,
      gates: o.gates,
      second_approver_required: o.secondApproverRequired,
      second_approver: o.secondApprover,
      state: o.state,
      applied_at: o.appliedAt,
      created_at: o.createdAt,
    })),
    promoted_at: p.promotedAt,
    created_at: p.createdAt,
  };
}

/** A choice for a promotion (issue 29): an attested artifact of the environment's repo. */
const promotableArtifact = z.object({
  artifact_id: z.uuid(),
  name: z.string(),
  job: z.string(),
  run_id: z.string(),
  commit_sha: z.string(),
  digest,
  size_bytes: z.number().nullable(),
  sealed_at: iso,
  attestation: z.enum(["logged", "verified"]),
});
export const promotableArtifactList = z.object({ artifacts: z.array(promotableArtifact) });

export function promotableArtifactWire(a: PromotableArtifact): z.infer<typeof promotableArtifact> {
  return {
    artifact_id: a.artifactId,
    name: a.name,
    job: a.job,
    run_id: a.runId,
    commit_sha: a.commitSha,
    digest: a.digest,
    size_bytes: a.sizeBytes,
    sealed_at: a.sealedAt,
    attestation: a.attestation,
  };
}
