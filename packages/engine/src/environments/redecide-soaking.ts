import { withTx, type Db } from "@kiln/db";
import { decide } from "@kiln/domain";
import type { EnvActor, EnvDeps } from "./env-actor.ts";
import { loadEnvironment } from "./environment-store.ts";
import { gatherArtifactFacts } from "./gather-facts.ts";
import { decideAndRecord, policyAndFacts } from "./promotion-decision.ts";
import { loadPromotionSubject } from "./promotion-subject.ts";

// A promotion waiting only for time (the previous environment's soak) has nobody left to act on
// it: no approval or override will come to re-decide it. This pass re-decides pending promotions
// whose last decision named PREVIOUS.SOAKING, and records a new decision only when the answer
// changed, so a promotion still soaking costs one read and leaves no audit noise.

export interface RedecideReport {
  checked: number;
  decided: number;
  promoted: number;
}

const SOAKING = JSON.stringify([{ code: "PREVIOUS.SOAKING" }]);

export async function redecideSoakingPromotions(db: Db, deps: EnvDeps, limit = 200): Promise<RedecideReport> {
  const due = await db.$queryRaw<{ id: string; org_id: string }[]>`
    SELECT id::text, org_id::text FROM promotion
    WHERE state = 'pending' AND reasons @> ${SOAKING}::jsonb
    ORDER BY decided_at LIMIT ${limit}`;
  const report: RedecideReport = { checked: due.length, decided: 0, promoted: 0 };
  for (const row of due) {
    const state = await redecideOne(db, deps, row.org_id, row.id);
    if (state) report.decided += 1;
    if (state === "promoted") report.promoted += 1;
  }
  return report;
}

async function redecideOne(db: Db, deps: EnvDeps, orgId: string, promotionId: string): Promise<string | null> {
  // The platform re-decides on the requester's behalf; it approves nothing (it is no member).
  const actor: EnvActor = { orgId, role: "admin", userId: null, login: null, actor: "system:soak" };
  const first = await loadPromotionSubject(db, orgId, promotionId);
  if (first.state !== "pending") return null;
  const env0 = await loadEnvironment(db, orgId, first.environmentId);
  const facts = await gatherArtifactFacts(db, deps.gateTimeoutMs, first.artifact, env0.after_id);
  return withTx(db, "redecide-soaking-promotion", async (tx) => {
    // Same lock order as every decision: environment, then promotion.
    const env = await loadEnvironment(tx, orgId, first.environmentId, { lock: true });
    const p = await loadPromotionSubject(tx, orgId, promotionId, { lock: true });
    if (p.state !== "pending") return null;
    const { policy, facts: full } = await policyAndFacts(tx, deps, env, p, facts);
    const preview = decide(policy, full, new Date());
    if (preview.reasons.some((r) => r.code === "PREVIOUS.SOAKING")) return null;
    const outcome = await decideAndRecord(tx, deps, {
      actor,
      env,
      promotion: p,
      facts,
      reason: "",
      trigger: "soak_elapsed",
    });
    return outcome.state;
  });
}
