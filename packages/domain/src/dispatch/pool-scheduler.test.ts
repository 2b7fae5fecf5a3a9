import { describe, expect, it } from "vitest";
import { PoolScheduler } from "./pool-scheduler.ts";
import { queued } from "./test-support.ts";

describe("PoolScheduler", () => {
  const entitlements = [
    { orgId: "A", slots: 1, weight: 1 },
    { orgId: "B", slots: 1, weight: 1 },
  ];

  it("re-queues a preempted job as it was, first in its org's line", () => {
    const s = new PoolScheduler({ policy: "fair", capacity: 2, entitlements });
    s.enqueue(queued("a1", "A", 0, { tier: "background" }));
    s.enqueue(queued("a2", "A", 1, { tier: "background" }));
    s.enqueue(queued("a3", "A", 2, { tier: "background" }));
    s.start("a1", 10);
    s.start("a2", 11);
    s.enqueue(queued("b1", "B", 20));
    const d = s.next(20);
    expect(d).toMatchObject({ pick: { jobId: "b1" }, reason: "preempting_background" });
    expect(d.preempt.map((p) => p.jobId)).toEqual(["a2"]);
    expect(s.preempt("a2")).toMatchObject({ jobId: "a2", enqueuedAt: 1, notBefore: null });
    s.start("b1", 20);
    s.finish("a1");
    expect(s.next(30).pick?.jobId).toBe("a2");
  });

  it("applies the nearly-done bump when progress is updated, and wakes backoff on time", () => {
    const s = new PoolScheduler({ policy: "fair", capacity: 1 });
    s.enqueue(queued("old", "A", 0, { runId: "r1" }));
    s.enqueue(queued("young", "A", 20_000, { runId: "r2" }));
    expect(s.next(20_000).pick?.jobId).toBe("old");
    s.update("young", { runProgress: 0.9 });
    expect(s.next(20_000).pick?.jobId).toBe("young");
    s.update("young", { notBefore: 25_000 });
    expect(s.nextWakeAt()).toBe(25_000);
    expect(s.waitReason("young")).toBe("backoff");
    expect(s.next(24_999).pick?.jobId).toBe("old");
    expect(s.next(25_000).pick?.jobId).toBe("young");
  });

  it("rejects duplicate jobs and invalid entitlements", () => {
    const s = new PoolScheduler({ policy: "fair", capacity: 1 });
    s.enqueue(queued("x", "A", 0));
    expect(() => s.enqueue(queued("x", "A", 0))).toThrow(RangeError);
    expect(
      () => new PoolScheduler({ policy: "fair", capacity: 1, entitlements: [{ orgId: "A", slots: 1, weight: 0 }] }),
    ).toThrow(RangeError);
    expect(() => new PoolScheduler({ policy: "fair", capacity: -1 })).toThrow(RangeError);
  });
});
