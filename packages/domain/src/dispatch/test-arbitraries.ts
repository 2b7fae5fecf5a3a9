import fc from "fast-check";
import { TIERS, type DispatchOptions, type PoolState, type QueuedJob, type RunningJob } from "./types.ts";

export interface GeneratedPool {
  state: PoolState;
  orgCaps: Map<string, number>;
}

const orgArb = fc.record({
  slots: fc.integer({ min: 0, max: 6 }),
  weight: fc.integer({ min: 1, max: 4 }),
  cap: fc.option(fc.integer({ min: 0, max: 8 }), { nil: undefined }),
  hasRow: fc.boolean(),
});

const runningArb = fc.record({
  org: fc.nat(),
  tier: fc.constantFrom(...TIERS),
  startedAt: fc.integer({ min: 0, max: 2_000 }),
});

const queuedArb = (withDag: boolean) =>
  fc.record({
    org: fc.nat(),
    tier: fc.constantFrom(...TIERS),
    enqueuedAt: fc.integer({ min: 0, max: 3_000 }),
    runProgress: fc.constantFrom(0, 0.5, 0.8, 0.95),
    run: fc.integer({ min: 0, max: 3 }),
    notBefore: fc.option(fc.integer({ min: 0, max: 4_000 }), { nil: null, freq: 4 }),
    predecessorsDone: withDag ? fc.boolean() : fc.constant(true),
  });

/**
 * Random pool states that respect capacity and caps in what is already running (the claim
 * transaction guarantees that much), with up to 5 orgs and 30 queued jobs.
 */
export function poolArb(opts: { withDag: boolean }): fc.Arbitrary<GeneratedPool> {
  return fc
    .record({
      capacity: fc.integer({ min: 0, max: 12 }),
      orgs: fc.array(orgArb, { minLength: 1, maxLength: 5 }),
      running: fc.array(runningArb, { maxLength: 15 }),
      queued: fc.array(queuedArb(opts.withDag), { maxLength: 30 }),
      now: fc.integer({ min: 0, max: 3_000 }),
    })
    .map(({ capacity, orgs, running, queued, now }) => {
      const orgId = (i: number) => `org${i % orgs.length}`;
      const orgCaps = new Map<string, number>();
      orgs.forEach((o, i) => {
        if (o.cap !== undefined) orgCaps.set(`org${i}`, o.cap);
      });
      const perOrg = new Map<string, number>();
      const runningJobs: RunningJob[] = [];
      running.forEach((r, i) => {
        const org = orgId(r.org);
        const held = perOrg.get(org) ?? 0;
        if (runningJobs.length >= capacity || held >= (orgCaps.get(org) ?? Infinity)) return;
        perOrg.set(org, held + 1);
        runningJobs.push({
          jobId: `run${i}`,
          orgId: org,
          tier: r.tier,
          startedAt: Math.min(r.startedAt, now),
          runId: `${org}-r${i % 3}`,
        });
      });
      const queuedJobs: QueuedJob[] = queued.map((q, i) => ({
        jobId: `job${String(i).padStart(2, "0")}`,
        orgId: orgId(q.org),
        runId: `${orgId(q.org)}-r${q.run}`,
        tier: q.tier,
        enqueuedAt: Math.min(q.enqueuedAt, now),
        runProgress: q.runProgress,
        notBefore: q.notBefore,
        predecessorsDone: q.predecessorsDone,
      }));
      const entitlements = orgs.flatMap((o, i) =>
        o.hasRow ? [{ orgId: `org${i}`, slots: o.slots, weight: o.weight }] : [],
      );
      const state: PoolState = { capacity, entitlements, running: runningJobs, queued: queuedJobs, now };
      return { state, orgCaps };
    });
}

export const policyArb: fc.Arbitrary<DispatchOptions["policy"]> = fc.constantFrom("fair", "fifo");

/** Deterministic shuffle for order-independence checks. */
export function shuffled<T>(xs: readonly T[], seed: number): T[] {
  const out = [...xs];
  let s = seed >>> 0;
  for (let i = out.length - 1; i > 0; i--) {
    s = (Math.imul(s ^ (s >>> 15), 0x2c1b3c6d) + 0x9e3779b9) >>> 0;
    const j = s % (i + 1);
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}
