// Retention test support: a real sealed, bound artifact of a finished run with a chosen trigger and
// ref, and environment pointers written the way env-core's schema holds them (its engine code is
// not on this branch; the rows are what retention reads).
import { randomUUID } from "node:crypto";
import { withTx, type Db } from "@kiln/db";
import type { ArtifactStore } from "../../src/artifacts/artifact-context.ts";
import { completeAttempt } from "../../src/attempts/complete-attempt.ts";
import { claimJob } from "../../src/dispatch/claim-job.ts";
import { bytes, publish } from "../artifacts/support.ts";
import { def, newSession, seedFrozenRun, TEST_CFG, type Tenant } from "../support.ts";

const PUBLISH_ONE = `version: 1
jobs:
  - name: build
    steps: [make]
    artifacts:
      publish:
        - name: app
          path: out/app
`;

export interface Sealed {
  genId: string;
  runId: string;
  jobId: string;
  objectKey: string;
}

/** A finished run of `ref` (and `trigger`) whose one job published and bound artifact "app". */
export async function sealedArtifact(
  db: Db,
  store: ArtifactStore,
  tenant: Tenant,
  ref: string,
  trigger = "push",
): Promise<Sealed> {
  const session = await newSession(db, tenant);
  const runId = await seedFrozenRun(db, tenant, def(PUBLISH_ONE), "trusted", ref);
  await db.$executeRaw`UPDATE workflow_run SET trigger = ${trigger} WHERE id = ${runId}::uuid`;
  const r = await claimJob(db, TEST_CFG, { sessionId: session, claimRequestId: randomUUID() });
  if (r.kind !== "claimed" || r.ticket.runId !== runId) throw new Error(`claim: ${r.kind}`);
  const tk = r.ticket;
  const genId = await publish(db, store, tk, "app", bytes(4096, Math.floor(Math.random() * 1e6)));
  await completeAttempt(db, TEST_CFG, {
    attemptId: tk.attemptId,
    jobId: tk.jobId,
    epoch: tk.epoch,
    outcome: "success",
    sandboxDestroyed: true,
  });
  const g = await db.$queryRaw<{ object_key: string }[]>`
    SELECT object_key FROM artifact_generation WHERE id = ${genId}::uuid`;
  return { genId, runId, jobId: tk.jobId, objectKey: g[0]?.object_key ?? "" };
}

export async function stamp(db: Db, genId: string): Promise<{ cls: string | null; expiresAt: Date; createdAt: Date }> {
  const r = await db.$queryRaw<{ retention_class: string | null; expires_at: Date; created_at: Date }[]>`
    SELECT retention_class, expires_at, created_at FROM artifact_generation WHERE id = ${genId}::uuid`;
  if (!r[0]) throw new Error("no generation");
  return { cls: r[0].retention_class, expiresAt: r[0].expires_at, createdAt: r[0].created_at };
}

const digestOf = async (db: Db, genId: string) =>
  (await db.$queryRaw<{ sha256: string }[]>`SELECT sha256 FROM artifact_generation WHERE id = ${genId}::uuid`)[0]
    ?.sha256 ?? "";

/**
 * An environment of the tenant's repo whose pointer moved to each of `moves` in turn: the last is
 * the live pointer, the earlier ones are its history (rollback targets).
 */
export async function promoteThrough(db: Db, tenant: Tenant, moves: Sealed[]): Promise<string> {
  const digests = new Map<string, string>();
  for (const m of moves) digests.set(m.genId, await digestOf(db, m.genId));
  return withTx(db, "seed-environment", async (tx) => {
    const env = await tx.$queryRaw<{ id: string }[]>`
      INSERT INTO environment (org_id, repo_id, name, position, policy_version, created_by)
      VALUES (${tenant.orgId}::uuid, ${tenant.repoId}::uuid, ${`env-${randomUUID().slice(0, 8)}`}, 0, 1, 'test')
      RETURNING id::text`;
    const envId = env[0]?.id ?? "";
    await tx.$executeRaw`
      INSERT INTO environment_policy (environment_id, version, org_id, policy, created_by)
      VALUES (${envId}::uuid, 1, ${tenant.orgId}::uuid, '{}'::jsonb, 'test')`;
    let from: { gen: string; digest: string } | null = null;
    let seq = 0;
    for (const m of moves) {
      const digest = digests.get(m.genId) ?? "";
      const p = await tx.$queryRaw<{ id: string }[]>`
        INSERT INTO promotion (org_id, repo_id, environment_id, kind, requested_by, reason, generation_id, digest,
                               run_id, job_id, artifact_name, state, verdict, fail_mode, policy_version, decided_at, promoted_at)
        VALUES (${tenant.orgId}::uuid, ${tenant.repoId}::uuid, ${envId}::uuid, 'promote', 'test', 'ship it',
                ${m.genId}::uuid, ${digest}, ${m.runId}::uuid, ${m.jobId}::uuid, 'app', 'promoted', 'allow', 'closed', 1, now(), now())
        RETURNING id::text`;
      const promotionId = p[0]?.id ?? "";
      seq++;
      await tx.$executeRaw`
        INSERT INTO environment_pointer_move (org_id, environment_id, promotion_id, kind, from_generation_id, from_digest,
                                              to_generation_id, to_digest, pointer_seq, actor)
        VALUES (${tenant.orgId}::uuid, ${envId}::uuid, ${promotionId}::uuid, 'promote', ${from?.gen ?? null}::uuid,
                ${from?.digest ?? null}, ${m.genId}::uuid, ${digest}, ${seq}, 'test')`;
      await tx.$executeRaw`
        UPDATE environment SET current_generation_id = ${m.genId}::uuid, current_digest = ${digest},
               current_promotion_id = ${promotionId}::uuid, pointer_moved_at = now(), pointer_seq = ${seq}
        WHERE id = ${envId}::uuid`;
      from = { gen: m.genId, digest };
    }
    return envId;
  });
}

export const DAY = 86_400_000;
export const justBefore = (d: Date) => new Date(d.getTime() - 1);
