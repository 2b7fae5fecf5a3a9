import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { chooseNext } from "./choose-next.ts";
import { PoolScheduler } from "./pool-scheduler.ts";
import { policyArb, poolArb, shuffled } from "./test-arbitraries.ts";
import { requeuedFromRunning } from "./test-support.ts";
import type { DispatchDecision, DispatchOptions, Entitlement, PoolState, QueuedJob } from "./types.ts";

const slotsOf = (state: PoolState, orgId: string): number =>
  state.entitlements.find((e: Entitlement) => e.orgId === orgId)?.slots ?? 0;
const runningOf = (state: PoolState, orgId: string): number => state.running.filter((r) => r.orgId === orgId).length;

/** Applies a decision the way the control plane would: stop the victims (re-queued), start the pick. */
function apply(state: PoolState, d: DispatchDecision, originals: Map<string, QueuedJob>): PoolState {
  if (!d.pick) return state;
  const pick = d.pick;
  const victims = new Set(d.preempt.map((p) => p.jobId));
  const requeued = state.running
    .filter((r) => victims.has(r.jobId))
    .map((r) => {
      const original = originals.get(r.jobId);
      return original ? { ...original, notBefore: null } : requeuedFromRunning(r);
    });
  return {
    ...state,
    queued: [...state.queued.filter((j) => j.jobId !== pick.jobId), ...requeued],
    running: [
      ...state.running.filter((r) => !victims.has(r.jobId)),
      { jobId: pick.jobId, orgId: pick.orgId, tier: pick.tier, startedAt: state.now, runId: pick.runId },
    ],
  };
}

function finishOne(state: PoolState, choice: number): PoolState {
  if (state.running.length === 0) return { ...state, now: state.now + 500 };
  const victim = state.running[choice % state.running.length];
  return { ...state, running: state.running.filter((r) => r !== victim), now: state.now + 100 };
}

describe("chooseNext: properties", () => {
  it("never exceeds a hard cap or the pool's capacity, and preempts only borrowed background work", () => {
    fc.assert(
      fc.property(
        poolArb({ withDag: true }),
        policyArb,
        fc.array(fc.nat(), { maxLength: 40 }),
        ({ state: initial, orgCaps }, policy, steps) => {
          const opts: DispatchOptions = { policy, orgCaps };
          const originals = new Map(initial.queued.map((j) => [j.jobId, j]));
          let state = initial;
          for (const step of steps) {
            const d = chooseNext(state, opts);
            if (!d.pick || step % 4 === 0) {
              state = finishOne(state, step);
              continue;
            }
            const pick = d.pick;
            expect(state.queued).toContain(pick);
            expect(pick.predecessorsDone).toBe(true);
            expect(pick.notBefore ?? -Infinity).toBeLessThanOrEqual(state.now);
            expect(runningOf(state, pick.orgId)).toBeLessThan(orgCaps.get(pick.orgId) ?? Infinity);
            expect(state.running.length - d.preempt.length).toBeLessThan(state.capacity);
            if (d.preempt.length > 0) {
              expect(policy).toBe("fair");
              expect(pick.tier).not.toBe("background");
              expect(runningOf(state, pick.orgId)).toBeLessThan(slotsOf(state, pick.orgId));
              for (const v of d.preempt) {
                expect(v.tier).toBe("background");
                expect(runningOf(state, v.orgId)).toBeGreaterThan(slotsOf(state, v.orgId));
              }
            }
            state = apply(state, d, originals);
            expect(state.running.length).toBeLessThanOrEqual(state.capacity);
            for (const [org, cap] of orgCaps) expect(runningOf(state, org)).toBeLessThanOrEqual(cap);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it("is deterministic and independent of the input order", () => {
    fc.assert(
      fc.property(poolArb({ withDag: true }), policyArb, fc.nat(), ({ state, orgCaps }, policy, seed) => {
        const opts: DispatchOptions = { policy, orgCaps };
        const reordered: PoolState = {
          ...state,
          entitlements: shuffled(state.entitlements, seed),
          running: shuffled(state.running, seed + 1),
          queued: shuffled(state.queued, seed + 2),
        };
        expect(chooseNext(reordered, opts)).toEqual(chooseNext(state, opts));
        expect(chooseNext(state, opts)).toEqual(chooseNext(state, opts));
      }),
      { numRuns: 300 },
    );
  });

  it("a long-lived PoolScheduler fed events decides exactly as chooseNext on the snapshot", () => {
    fc.assert(
      fc.property(
        poolArb({ withDag: false }),
        policyArb,
        fc.array(fc.nat(), { maxLength: 40 }),
        ({ state: initial, orgCaps }, policy, steps) => {
          const opts: DispatchOptions = { policy, orgCaps };
          const originals = new Map(initial.queued.map((j) => [j.jobId, j]));
          const live = PoolScheduler.fromState(initial, opts);
          let state = initial;
          for (const step of steps) {
            const fromSnapshot = chooseNext(state, opts);
            const fromLive = live.next(state.now);
            expect(fromLive).toEqual(fromSnapshot);
            if (!fromLive.pick || step % 4 === 0) {
              const before = state.running;
              state = finishOne(state, step);
              for (const r of before) if (!state.running.includes(r)) live.finish(r.jobId);
              continue;
            }
            for (const v of fromLive.preempt) live.preempt(v.jobId);
            live.start(fromLive.pick.jobId, state.now);
            state = apply(state, fromLive, originals);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
