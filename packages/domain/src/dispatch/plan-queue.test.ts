import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { chooseNext } from "./choose-next.ts";
import { planQueue } from "./plan-queue.ts";
import { policyArb, poolArb, shuffled } from "./test-arbitraries.ts";
import { manyQueued, manyRunning, pool, queued, requeuedFromRunning } from "./test-support.ts";
import type { DispatchOptions, PoolState, QueuedJob } from "./types.ts";

const durationOf = (orgId: string): number => 1_000 * (1 + (Number(orgId.replace(/\D/g, "")) % 3));

/**
 * The control plane's loop, using only chooseNext on full snapshots: dispatch while it picks,
 * then let the earliest expected completion (or backoff expiry) happen. Returns start times.
 */
function replayWithChooseNext(initial: PoolState, opts: DispatchOptions): { jobId: string; at: number }[] {
  const originals = new Map(initial.queued.map((j) => [j.jobId, j]));
  const ends = new Map(initial.running.map((r) => [r.jobId, Math.max(initial.now, r.startedAt + durationOf(r.orgId))]));
  const starts: { jobId: string; at: number }[] = [];
  let s = initial;
  for (let guard = 0; guard < 10_000; guard++) {
    for (let d = chooseNext(s, opts); d.pick; d = chooseNext(s, opts)) {
      const pick: QueuedJob = d.pick;
      const victims = new Set(d.preempt.map((v) => v.jobId));
      const requeued = s.running
        .filter((r) => victims.has(r.jobId))
        .map((r) => {
          const original = originals.get(r.jobId);
          return original ? { ...original, notBefore: null } : requeuedFromRunning(r);
        });
      for (const v of victims) ends.delete(v);
      s = {
        ...s,
        queued: [...s.queued.filter((j) => j.jobId !== pick.jobId), ...requeued],
        running: [
          ...s.running.filter((r) => !victims.has(r.jobId)),
          { jobId: pick.jobId, orgId: pick.orgId, tier: pick.tier, startedAt: s.now, runId: pick.runId },
        ],
      };
      ends.set(pick.jobId, s.now + durationOf(pick.orgId));
      if (initial.queued.some((j) => j.jobId === pick.jobId) && !starts.some((x) => x.jobId === pick.jobId))
        starts.push({ jobId: pick.jobId, at: s.now });
    }
    const wakes = s.queued.map((j) => j.notBefore ?? -Infinity).filter((t) => t > s.now);
    const next = Math.min(...ends.values(), ...wakes);
    if (s.queued.length === 0 || !Number.isFinite(next)) break;
    const now = Math.max(s.now, next);
    const done = new Set([...ends].filter(([, at]) => at <= now).map(([id]) => id));
    for (const id of done) ends.delete(id);
    s = { ...s, now, running: s.running.filter((r) => !done.has(r.jobId)) };
  }
  return starts;
}

describe("planQueue", () => {
  it("positions and ETAs follow the order chooseNext actually picks", () => {
    fc.assert(
      fc.property(poolArb({ withDag: false }), policyArb, ({ state, orgCaps }, policy) => {
        const opts = { policy, orgCaps };
        const plan = planQueue(state, { ...opts, expectedDurationMs: durationOf });
        const starts = replayWithChooseNext(state, opts);
        const planned = [...plan]
          .sort(([, a], [, b]) => a.position - b.position)
          .filter(([, e]) => Number.isFinite(e.etaMs));
        expect(planned.map(([jobId, e]) => ({ jobId, at: e.etaMs }))).toEqual(starts);
        expect(plan.size).toBe(state.queued.length);
        expect([...plan.values()].map((e) => e.position).sort((a, b) => a - b)).toEqual(
          state.queued.map((_, i) => i + 1),
        );
      }),
      { numRuns: 200 },
    );
  });

  it("is deterministic and independent of the input order, predecessors included", () => {
    fc.assert(
      fc.property(poolArb({ withDag: true }), policyArb, fc.nat(), ({ state, orgCaps }, policy, seed) => {
        const opts = { policy, orgCaps, expectedDurationMs: durationOf };
        const sorted = (m: Map<string, unknown>) => [...m].sort(([a], [b]) => (a < b ? -1 : 1));
        const reordered = {
          ...state,
          running: shuffled(state.running, seed),
          queued: shuffled(state.queued, seed + 1),
        };
        expect(sorted(planQueue(reordered, opts))).toEqual(sorted(planQueue(state, opts)));
      }),
      { numRuns: 200 },
    );
  });

  it("puts the small org's jobs near the front under fair and behind the burst under fifo", () => {
    const state = pool({
      capacity: 40,
      queued: [...manyQueued("A", 900, 0), ...manyQueued("B", 5, 1_000)],
      now: 1_000,
    });
    const positions = (policy: "fair" | "fifo") => {
      const plan = planQueue(state, { policy, expectedDurationMs: () => 1_000 });
      return manyQueued("B", 5, 0).map((j) => plan.get(j.jobId));
    };
    expect(positions("fair").map((e) => e?.position)).toEqual([2, 4, 6, 8, 10]);
    expect(positions("fair").every((e) => e?.etaMs === 1_000 && e.reason === "ready")).toBe(true);
    expect(positions("fifo").map((e) => e?.position)).toEqual([901, 902, 903, 904, 905]);
    expect(positions("fifo")[0]).toEqual({ position: 901, etaMs: 23_000, reason: "no_capacity" });
  });

  it("derives ETAs from expected durations of running work", () => {
    const state = pool({
      capacity: 2,
      running: manyRunning("A", 2, "interactive", 0),
      queued: manyQueued("A", 3, 0),
      now: 500,
    });
    const plan = planQueue(state, { policy: "fair", expectedDurationMs: () => 10_000 });
    expect([...plan.values()].map((e) => [e.position, e.etaMs])).toEqual([
      [1, 10_000],
      [2, 10_001],
      [3, 20_000],
    ]);
  });

  it("explains each wait", () => {
    const state = pool({
      capacity: 3,
      now: 1_000,
      running: manyRunning("capped", 1),
      queued: [
        queued("go", "B", 0),
        queued("capped-1", "capped", 0),
        queued("retry", "B", 0, { notBefore: 5_000 }),
        queued("after-build", "B", 0, { predecessorsDone: false, runId: "B-run" }),
        queued("full-1", "C", 10),
        queued("full-2", "C", 11),
      ],
    });
    const plan = planQueue(state, {
      policy: "fair",
      orgCaps: new Map([["capped", 1]]),
      expectedDurationMs: () => 2_000,
    });
    const reasons = Object.fromEntries([...plan].map(([id, e]) => [id, e.reason]));
    expect(reasons).toEqual({
      go: "ready",
      "full-1": "ready",
      "full-2": "no_capacity",
      "capped-1": "org_cap",
      retry: "backoff",
      "after-build": "waiting_for_predecessor",
    });
    expect(plan.get("retry")?.etaMs).toBe(5_000);
    // The run's other known jobs (go, retry) must finish first: retry ends at 5_000 + 2_000.
    expect(plan.get("after-build")?.etaMs).toBe(7_000);
  });

  it("reports an infinite ETA when nothing can ever start the job", () => {
    const plan = planQueue(pool({ capacity: 0, queued: [queued("x", "A", 0)] }), {
      policy: "fair",
      expectedDurationMs: () => 1,
    });
    expect(plan.get("x")).toEqual({ position: 1, etaMs: Number.POSITIVE_INFINITY, reason: "no_capacity" });
  });
});
