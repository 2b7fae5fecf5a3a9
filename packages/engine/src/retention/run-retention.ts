// The retention pass and its plan (docs/adr/0036). Both run the same steps, in the same order, on
// the same loaders and the same per-item eviction: stamp finished runs, evict expired artifacts and
// logs, then run metadata (whose "live data" blocker the first two may just have lifted). The plan
// does it all in one transaction it rolls back; the worker commits each item and then deletes the
// bytes. So what `kiln retention plan --at T` lists is exactly what a pass at T evicts.
import { withTx, type Db, type Tx } from "@kiln/db";
import {
  EVICTION_KINDS,
  planRetention,
  type EvictionKind,
  type RetentionPlan,
  type RetentionPlanEntry,
  type RetentionWindows,
} from "@kiln/domain";
import type { ArtifactStore } from "../artifacts/index.ts";
import { evictItem } from "./evict-item.ts";
import { loadCandidates, stampFinishedRuns } from "./retention-candidates.ts";
import { sweepExpiredObjects } from "./sweep-objects.ts";

export interface RetentionPassOptions {
  /** The instant to decide at: the worker passes its clock, tests and plans a chosen one. */
  at: Date;
  windows: RetentionWindows;
  orgId?: string | null;
  /** Items per kind per pass. */
  limit?: number;
}

export interface RetentionPassReport {
  stampedRuns: number;
  evicted: Record<EvictionKind, number>;
  kept: RetentionPlanEntry[];
  objectsDeleted: number;
}

type Evict = (kind: EvictionKind, id: string) => Promise<RetentionPlanEntry | null>;

async function decideAll(
  db: Db | Tx,
  opts: RetentionPassOptions,
  evict: Evict,
): Promise<{ evict: RetentionPlanEntry[]; kept: RetentionPlanEntry[]; stamped: number }> {
  const stamped = await stampFinishedRuns(db, opts.windows, opts.limit);
  const evicted: RetentionPlanEntry[] = [];
  const kept: RetentionPlanEntry[] = [];
  for (const kind of EVICTION_KINDS) {
    const candidates = await loadCandidates(db, kind, { at: opts.at, orgId: opts.orgId ?? null, limit: opts.limit });
    const plan = planRetention(candidates, opts.at);
    kept.push(...plan.kept);
    for (const e of plan.evict) {
      const done = await evict(kind, e.id);
      if (done) evicted.push(done);
    }
  }
  return { evict: evicted, kept, stamped };
}

/** The worker's pass: commits each eviction (with its audit record), then deletes the bytes. */
export async function runRetentionPass(
  db: Db,
  store: ArtifactStore,
  opts: RetentionPassOptions,
): Promise<RetentionPassReport> {
  const r = await decideAll(db, opts, (kind, id) =>
    withTx(db, "retention-evict", (tx) => evictItem(tx, kind, id, opts.at)),
  );
  const evicted = { artifact: 0, log: 0, run_metadata: 0 };
  for (const e of r.evict) evicted[e.kind]++;
  return { stampedRuns: r.stamped, evicted, kept: r.kept, objectsDeleted: await sweepExpiredObjects(db, store) };
}

class PlanRollback extends Error {
  constructor(readonly plan: RetentionPlan) {
    super("retention plan: rolled back on purpose");
  }
}

/** What a pass at `opts.at` would evict, and what it would keep and why; nothing is changed. */
export async function planRetentionPass(db: Db, opts: RetentionPassOptions): Promise<RetentionPlan> {
  try {
    await withTx(
      db,
      "retention-plan",
      async (tx) => {
        const r = await decideAll(tx, opts, (kind, id) => evictItem(tx, kind, id, opts.at));
        throw new PlanRollback({ at: opts.at.toISOString(), evict: r.evict, kept: r.kept });
      },
      { timeoutMs: 120_000, retries: 0 },
    );
  } catch (e) {
    if (e instanceof PlanRollback) return e.plan;
    throw e;
  }
  throw new Error("unreachable: the plan transaction always rolls back");
}
