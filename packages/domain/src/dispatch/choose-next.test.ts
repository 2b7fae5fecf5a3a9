import { describe, expect, it } from "vitest";
import { chooseNext } from "./choose-next.ts";
import { applyPick, manyQueued, manyRunning, pool, queued, running } from "./test-support.ts";
import type { DispatchOptions, PoolState } from "./types.ts";

const FAIR: DispatchOptions = { policy: "fair" };
const FIFO: DispatchOptions = { policy: "fifo" };

/** Applies `n` picks with no completions; returns the org of each pick. */
function pickSequence(state: PoolState, opts: DispatchOptions, n: number): string[] {
  const orgs: string[] = [];
  let s = state;
  for (let i = 0; i < n; i++) {
    const d = chooseNext(s, opts);
    if (!d.pick) break;
    orgs.push(d.pick.orgId);
    s = applyPick(
      s,
      d.pick.jobId,
      d.preempt.map((p) => p.jobId),
    );
  }
  return orgs;
}

describe("chooseNext: tiers before fairness", () => {
  it("picks interactive, then scheduled, then background, whatever each org holds", () => {
    const state = pool({
      capacity: 10,
      running: manyRunning("busy", 5),
      queued: [
        queued("bg", "idle", 0, { tier: "background" }),
        queued("sched", "idle", 1, { tier: "scheduled" }),
        queued("inter", "busy", 2, { tier: "interactive" }),
      ],
    });
    let s = state;
    const order: string[] = [];
    for (let i = 0; i < 3; i++) {
      const d = chooseNext(s, FAIR);
      order.push(d.pick?.jobId ?? "none");
      s = applyPick(s, d.pick?.jobId ?? "");
    }
    expect(order).toEqual(["inter", "sched", "bg"]);
  });
});

describe("chooseNext: weighted fair queuing", () => {
  it("gives the small org's 5 jobs the next slots although 900 of the big org's are older", () => {
    const state = pool({
      capacity: 40,
      running: manyRunning("A", 35),
      queued: [...manyQueued("A", 900, 0), ...manyQueued("B", 5, 1_000)],
      now: 1_000,
    });
    expect(pickSequence(state, FAIR, 6)).toEqual(["B", "B", "B", "B", "B"]);
  });

  it("under fifo the small org waits behind the big org's burst", () => {
    const state = pool({
      capacity: 40,
      running: manyRunning("A", 35),
      queued: [...manyQueued("A", 900, 0), ...manyQueued("B", 5, 1_000)],
      now: 1_000,
    });
    expect(pickSequence(state, FIFO, 5)).toEqual(["A", "A", "A", "A", "A"]);
  });

  it("splits idle capacity by weight", () => {
    const state = pool({
      capacity: 30,
      entitlements: [
        { orgId: "heavy", slots: 0, weight: 2 },
        { orgId: "light", slots: 0, weight: 1 },
      ],
      queued: [...manyQueued("heavy", 50, 0), ...manyQueued("light", 50, 0)],
    });
    const orgs = pickSequence(state, FAIR, 30);
    expect(orgs.filter((o) => o === "heavy")).toHaveLength(20);
    expect(orgs.filter((o) => o === "light")).toHaveLength(10);
  });

  it("within an org is FIFO with a bump for jobs of a nearly finished run", () => {
    const state = pool({
      capacity: 10,
      queued: [
        queued("old", "A", 0, { runId: "r1" }),
        queued("nearly-done", "A", 10_000, { runId: "r2", runProgress: 0.8 }),
        queued("nearly-done-but-late", "A", 60_000, { runId: "r3", runProgress: 0.9 }),
      ],
    });
    let s = state;
    const order: string[] = [];
    for (let d = chooseNext(s, FAIR); d.pick; d = chooseNext(s, FAIR)) {
      order.push(d.pick.jobId);
      s = applyPick(s, d.pick.jobId);
    }
    expect(order).toEqual(["nearly-done", "old", "nearly-done-but-late"]);
    expect(chooseNext(state, FIFO).pick?.jobId).toBe("old");
  });
});

describe("chooseNext: lending and return", () => {
  const entitlements = [
    { orgId: "A", slots: 20, weight: 1 },
    { orgId: "B", slots: 20, weight: 1 },
  ];

  it("lends B's idle slots to A", () => {
    const state = pool({ capacity: 40, entitlements, running: manyRunning("A", 20), queued: manyQueued("A", 30, 0) });
    const d = chooseNext(state, FAIR);
    expect(d.pick?.orgId).toBe("A");
    expect(d.reason).toBe("borrowed");
  });

  it("returns a freed slot to the owner before the borrower's older job", () => {
    // A borrowed all of B's slots; one of A's jobs just finished.
    const state = pool({
      capacity: 40,
      entitlements,
      running: manyRunning("A", 39),
      queued: [...manyQueued("A", 30, 0), queued("b1", "B", 5_000)],
      now: 5_000,
    });
    const d = chooseNext(state, FAIR);
    expect(d.pick?.jobId).toBe("b1");
    expect(d.reason).toBe("entitled");
    expect(d.preempt).toEqual([]);
  });

  it("does not stop the borrower's interactive jobs when the pool is full", () => {
    const state = pool({
      capacity: 40,
      entitlements,
      running: manyRunning("A", 40),
      queued: [queued("b1", "B", 5_000)],
    });
    expect(chooseNext(state, FAIR)).toEqual({ pick: null, preempt: [], reason: "no_capacity" });
  });
});

describe("chooseNext: background preemption", () => {
  const entitlements = [
    { orgId: "A", slots: 20, weight: 1 },
    { orgId: "B", slots: 20, weight: 1 },
  ];

  it("preempts the borrower's most recently started background job for the owner's interactive job", () => {
    const state = pool({
      capacity: 40,
      entitlements,
      running: [...manyRunning("A", 20, "interactive"), ...manyRunning("A", 20, "background", 100)],
      queued: [queued("b1", "B", 5_000)],
      now: 5_000,
    });
    const d = chooseNext(state, FAIR);
    expect(d.pick?.jobId).toBe("b1");
    expect(d.reason).toBe("preempting_background");
    expect(d.preempt.map((p) => p.jobId)).toEqual(["A-b0019"]);
  });

  it("never preempts work within the other org's own entitlement, nor for background work", () => {
    const within = pool({
      capacity: 40,
      entitlements,
      running: [...manyRunning("A", 20, "background"), ...manyRunning("C", 20)],
      queued: [queued("b1", "B", 5_000)],
    });
    expect(chooseNext(within, FAIR).preempt).toEqual([]);
    const backgroundOwner = pool({
      capacity: 40,
      entitlements,
      running: manyRunning("A", 40, "background"),
      queued: [queued("b1", "B", 5_000, { tier: "background" })],
    });
    expect(chooseNext(backgroundOwner, FAIR)).toEqual({ pick: null, preempt: [], reason: "no_capacity" });
  });

  it("never preempts under fifo", () => {
    const state = pool({
      capacity: 40,
      entitlements,
      running: manyRunning("A", 40, "background"),
      queued: [queued("b1", "B", 5_000)],
    });
    expect(chooseNext(state, FIFO).preempt).toEqual([]);
  });
});

describe("chooseNext: caps and eligibility", () => {
  it("skips an org at its hard cap and reports org_cap when nobody else can go", () => {
    const orgCaps = new Map([["A", 3]]);
    const state = pool({
      capacity: 40,
      running: manyRunning("A", 3),
      queued: [...manyQueued("A", 5, 0), queued("b1", "B", 9)],
    });
    expect(chooseNext(state, { policy: "fair", orgCaps }).pick?.jobId).toBe("b1");
    expect(chooseNext(state, { policy: "fifo", orgCaps }).pick?.jobId).toBe("b1");
    const onlyA = { ...state, queued: manyQueued("A", 5, 0) };
    expect(chooseNext(onlyA, { policy: "fair", orgCaps })).toEqual({ pick: null, preempt: [], reason: "org_cap" });
  });

  it("does not pick jobs in backoff or waiting for predecessors", () => {
    const state = pool({
      capacity: 4,
      now: 1_000,
      queued: [queued("later", "A", 0, { notBefore: 2_000 }), queued("blocked", "A", 0, { predecessorsDone: false })],
    });
    expect(chooseNext(state, FAIR)).toEqual({ pick: null, preempt: [], reason: "nothing_dispatchable" });
    expect(chooseNext({ ...state, now: 2_000 }, FAIR).pick?.jobId).toBe("later");
  });

  it("treats an org without an entitlement row as owning nothing", () => {
    const state = pool({
      capacity: 2,
      entitlements: [{ orgId: "owner", slots: 1, weight: 1 }],
      running: [running("x", "stranger")],
      queued: [queued("s", "stranger", 0), queued("o", "owner", 5)],
    });
    expect(chooseNext(state, FAIR).pick?.jobId).toBe("o");
  });
});
