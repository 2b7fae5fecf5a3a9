import { withTx, type Db, type DbOrTx } from "@kiln/db";
import { DomainError, parsePolicy, type GatePolicy } from "@kiln/domain";
import { recordAuditEvent } from "../audit/index.ts";
import { recordTransition } from "../shared/journal.ts";
import { requireAdmin, type EnvActor } from "./env-actor.ts";
import { loadEnvironment } from "./environment-store.ts";

export interface PolicyVersionView {
  environmentId: string;
  version: number;
  policy: GatePolicy;
  createdBy: string;
  comment: string | null;
  createdAt: string;
}

/**
 * An org admin sets a new policy version: validated against the environment (production fails
 * closed, a previous-environment gate needs one), appended as an immutable row, made current in
 * the same transaction, audited with the whole document.
 */
export async function setEnvironmentPolicy(
  db: Db,
  actor: EnvActor,
  input: { environmentId: string; policy: unknown; comment?: string | null },
): Promise<PolicyVersionView> {
  requireAdmin(actor, "change an environment's gate policy");
  return withTx(db, "set-environment-policy", async (tx) => {
    const env = await loadEnvironment(tx, actor.orgId, input.environmentId, { lock: true });
    const parsed = parsePolicy(input.policy, {
      name: env.name,
      production: env.production,
      hasPrevious: env.after_id !== null,
    });
    if (!parsed.ok)
      throw new DomainError("POLICY.INVALID", parsed.problems.map((p) => `${p.path}: ${p.message}`).join("; "), {
        problems: parsed.problems,
      });
    const version = env.policy_version + 1;
    await tx.$executeRaw`
      INSERT INTO environment_policy (environment_id, version, org_id, policy, created_by, comment)
      VALUES (${env.id}::uuid, ${version}, ${actor.orgId}::uuid, ${JSON.stringify(parsed.policy)}::jsonb, ${actor.actor},
              ${input.comment ?? null})`;
    await tx.$executeRaw`
      UPDATE environment SET policy_version = ${version}, fail_mode = ${parsed.policy.fail_mode}
      WHERE id = ${env.id}::uuid AND policy_version = ${env.policy_version}`;
    const facts = {
      environmentId: env.id,
      name: env.name,
      fromVersion: env.policy_version,
      version,
      policy: parsed.policy,
    };
    await recordTransition(tx, {
      orgId: actor.orgId,
      entity: "environment",
      from: `policy:v${env.policy_version}`,
      to: `policy:v${version}`,
      reason: "policy_set",
      data: facts,
    });
    await recordAuditEvent(tx, {
      orgId: actor.orgId,
      kind: "environment.policy_set",
      actor: actor.actor,
      subject: env.id,
      data: facts,
    });
    return getPolicyVersion(tx, actor.orgId, env.id, version);
  });
}

/** The policy in force (or a given version) of an environment of the org. */
export async function getPolicyVersion(
  db: DbOrTx,
  orgId: string,
  environmentId: string,
  version?: number,
): Promise<PolicyVersionView> {
  const env = await loadEnvironment(db, orgId, environmentId);
  const v = version ?? env.policy_version;
  const rows = await db.$queryRaw<
    { policy: GatePolicy; created_by: string; comment: string | null; created_at: Date }[]
  >`
    SELECT policy, created_by, comment, created_at FROM environment_policy
    WHERE environment_id = ${env.id}::uuid AND version = ${v} AND org_id = ${orgId}::uuid`;
  const row = rows[0];
  if (!row) throw new DomainError("ENV.NOT_FOUND", `no policy version ${v}`);
  return {
    environmentId: env.id,
    version: v,
    policy: row.policy,
    createdBy: row.created_by,
    comment: row.comment,
    createdAt: row.created_at.toISOString(),
  };
}
