import type { DbOrTx } from "@kiln/db";
import {
  DomainError,
  type FailMode,
  type GateResult,
  type PromotionKind,
  type PromotionState,
  type Verdict,
} from "@kiln/domain";
import { UUID } from "./env-actor.ts";

// GET /v1/promotions/{id}, the dashboard's inbox and environment history: the decision with each
// gate's reason, the approvals and the overrides. Filtered by org in every query.

export interface PromotionView {
  id: string;
  environmentId: string;
  environment: string;
  repoId: string;
  repo: string;
  production: boolean;
  kind: PromotionKind;
  state: PromotionState;
  decision: { verdict: Verdict; reasons: GateResult[]; failMode: FailMode; policyVersion: number; decidedAt: string };
  artifact: { id: string; name: string; digest: string; runId: string; jobId: string; attestationId: string | null };
  requester: { userId: string | null; login: string | null; actor: string };
  reason: string;
  fromDigest: string | null;
  approvals: { login: string; decision: "approve" | "reject"; comment: string | null; at: string }[];
  overrides: OverrideView[];
  promotedAt: string | null;
  createdAt: string;
}

export interface OverrideView {
  id: string;
  promotionId: string;
  actor: string;
  actorLogin: string | null;
  reason: string;
  expiresAt: string;
  gates: string[];
  secondApproverRequired: boolean;
  secondApprover: string | null;
  state: "pending" | "applied";
  appliedAt: string | null;
  createdAt: string;
}

type Row = {
  id: string;
  environment_id: string;
  environment: string;
  repo_id: string;
  repo: string;
  production: boolean;
  kind: PromotionKind;
  state: PromotionState;
  verdict: Verdict;
  reasons: GateResult[];
  fail_mode: FailMode;
  policy_version: number;
  decided_at: Date;
  generation_id: string;
  artifact_name: string;
  digest: string;
  run_id: string;
  job_id: string;
  attestation_id: string | null;
  requester_user_id: string | null;
  requester_login: string | null;
  requested_by: string;
  reason: string;
  from_digest: string | null;
  promoted_at: Date | null;
  created_at: Date;
};

const SELECT = `SELECT p.id, p.environment_id, e.name AS environment, p.repo_id, r.full_name AS repo, e.production, p.kind,
  p.state, p.verdict, p.reasons, p.fail_mode, p.policy_version, p.decided_at, p.generation_id, p.artifact_name,
  p.digest, p.run_id, p.job_id, p.attestation_id, p.requester_user_id, u.login AS requester_login, p.requested_by,
  p.reason, p.from_digest, p.promoted_at, p.created_at
  FROM promotion p JOIN environment e ON e.id = p.environment_id JOIN repo r ON r.id = p.repo_id
  LEFT JOIN app_user u ON u.id = p.requester_user_id`;

type OverrideRow = {
  id: string;
  promotion_id: string;
  actor: string;
  actor_login: string | null;
  reason: string;
  expires_at: Date;
  gates: string[];
  second_approver_required: boolean;
  second_login: string | null;
  state: "pending" | "applied";
  applied_at: Date | null;
  created_at: Date;
};

function overrideView(o: OverrideRow): OverrideView {
  return {
    id: o.id,
    promotionId: o.promotion_id,
    actor: o.actor,
    actorLogin: o.actor_login,
    reason: o.reason,
    expiresAt: o.expires_at.toISOString(),
    gates: o.gates,
    secondApproverRequired: o.second_approver_required,
    secondApprover: o.second_login,
    state: o.state,
    appliedAt: o.applied_at?.toISOString() ?? null,
    createdAt: o.created_at.toISOString(),
  };
}

const OVERRIDES = `SELECT o.id, o.promotion_id, o.actor, a.login AS actor_login, o.reason, o.expires_at, o.gates,
  o.second_approver_required, s.login AS second_login, o.state, o.applied_at, o.created_at
  FROM promotion_override o LEFT JOIN app_user a ON a.id = o.actor_user_id
  LEFT JOIN app_user s ON s.id = o.second_approver_user_id`;

function view(p: Row, approvals: PromotionView["approvals"], overrides: OverrideView[]): PromotionView {
  return {
    id: p.id,
    environmentId: p.environment_id,
    environment: p.environment,
    repoId: p.repo_id,
    repo: p.repo,
    production: p.production,
    kind: p.kind,
    state: p.state,
    decision: {
      verdict: p.verdict,
      reasons: p.reasons,
      failMode: p.fail_mode,
      policyVersion: p.policy_version,
      decidedAt: p.decided_at.toISOString(),
    },
    artifact: {
      id: p.generation_id,
      name: p.artifact_name,
      digest: p.digest,
      runId: p.run_id,
      jobId: p.job_id,
      attestationId: p.attestation_id,
    },
    requester: { userId: p.requester_user_id, login: p.requester_login, actor: p.requested_by },
    reason: p.reason,
    fromDigest: p.from_digest,
    approvals,
    overrides,
    promotedAt: p.promoted_at?.toISOString() ?? null,
    createdAt: p.created_at.toISOString(),
  };
}

export async function getPromotion(db: DbOrTx, orgId: string, promotionId: string): Promise<PromotionView> {
  if (!UUID.test(promotionId)) throw new DomainError("PROMOTION.NOT_FOUND", "no such promotion");
  const rows = await db.$queryRawUnsafe<Row[]>(
    `${SELECT} WHERE p.id = $1::uuid AND p.org_id = $2::uuid`,
    promotionId,
    orgId,
  );
  const p = rows[0];
  if (!p) throw new DomainError("PROMOTION.NOT_FOUND", "no such promotion");
  const approvals = await db.$queryRaw<
    { login: string; decision: "approve" | "reject"; comment: string | null; at: Date }[]
  >`
    SELECT u.login, a.decision, a.comment, a.created_at AS at FROM promotion_approval a JOIN app_user u ON u.id = a.user_id
    WHERE a.promotion_id = ${p.id}::uuid AND a.org_id = ${orgId}::uuid ORDER BY a.created_at, a.id`;
  const overrides = await db.$queryRawUnsafe<OverrideRow[]>(
    `${OVERRIDES} WHERE o.promotion_id = $1::uuid AND o.org_id = $2::uuid ORDER BY o.created_at`,
    p.id,
    orgId,
  );
  return view(
    p,
    approvals.map((a) => ({ login: a.login, decision: a.decision, comment: a.comment, at: a.at.toISOString() })),
    overrides.map(overrideView),
  );
}

/** Summaries (no approvals or overrides) by a filter the caller's org always bounds. */
async function listBy(db: DbOrTx, where: string, values: unknown[], limit: number): Promise<PromotionView[]> {
  const rows = await db.$queryRawUnsafe<Row[]>(
    `${SELECT} WHERE ${where} ORDER BY p.created_at DESC, p.id LIMIT ${limit}`,
    ...values,
  );
  return rows.map((r) => view(r, [], []));
}

/** The approvals inbox: the org's pending promotions, oldest first. */
export async function listPendingPromotions(db: DbOrTx, orgId: string): Promise<PromotionView[]> {
  const rows = await listBy(db, "p.org_id = $1::uuid AND p.state = 'pending'", [orgId], 200);
  return rows.reverse();
}

/** An environment's promotions and rollbacks, newest first (its deployment history). */
export async function listEnvironmentPromotions(
  db: DbOrTx,
  orgId: string,
  environmentId: string,
): Promise<PromotionView[]> {
  if (!UUID.test(environmentId)) throw new DomainError("ENV.NOT_FOUND", "no such environment");
  return listBy(db, "p.org_id = $1::uuid AND p.environment_id = $2::uuid", [orgId, environmentId], 100);
}

/** Override use, newest first: the org home's watched signal. */
export async function listOverrides(db: DbOrTx, orgId: string, limit = 50): Promise<OverrideView[]> {
  const rows = await db.$queryRawUnsafe<OverrideRow[]>(
    `${OVERRIDES} WHERE o.org_id = $1::uuid ORDER BY o.created_at DESC LIMIT ${Math.min(200, Math.max(1, limit))}`,
    orgId,
  );
  return rows.map(overrideView);
}
