import { describe, expect, it } from "vitest";
import { decideEviction, planRetention, type RetentionCandidate } from "./eviction.ts";

const c = (over: Partial<RetentionCandidate> = {}): RetentionCandidate => ({
  kind: "artifact",
  id: "a",
  orgId: "o",
  class: "other",
  expiresAt: new Date("2026-01-16T00:00:00Z"),
  blockers: [],
  ...over,
});

describe("decideEviction", () => {
  it("evicts at exactly expires_at and not a millisecond before", () => {
    expect(decideEviction(c(), new Date("2026-01-15T23:59:59.999Z"))).toEqual({
      action: "keep",
      reason: "not_expired",
    });
    expect(decideEviction(c(), new Date("2026-01-16T00:00:00.000Z"))).toEqual({ action: "evict", reason: "expired" });
  });

  it("keeps what a pointer, its history, a hold or a live run still needs", () => {
    const at = new Date("2027-01-01T00:00:00Z");
    for (const b of [
      "environment_pointer",
      "pointer_history",
      "hold",
      "consuming_run",
      "retryable_run",
      "live_data",
    ] as const)
      expect(decideEviction(c({ blockers: [b] }), at)).toEqual({ action: "keep", reason: b });
    expect(decideEviction(c({ blockers: ["hold", "environment_pointer"] }), at).reason).toBe("environment_pointer");
  });
});

describe("planRetention", () => {
  it("lists expired items to evict and expired items kept, in a stable order", () => {
    const at = new Date("2026-02-01T00:00:00Z");
    const plan = planRetention(
      [
        c({ id: "b", kind: "run_metadata" }),
        c({ id: "z" }),
        c({ id: "y", blockers: ["hold"] }),
        c({ id: "future", expiresAt: new Date("2026-03-01T00:00:00Z") }),
        c({ id: "l", kind: "log" }),
      ],
      at,
    );
    expect(plan.evict.map((e) => [e.kind, e.id])).toEqual([
      ["artifact", "z"],
      ["log", "l"],
      ["run_metadata", "b"],
    ]);
    expect(plan.kept).toEqual([
      {
        kind: "artifact",
        id: "y",
        org_id: "o",
        class: "other",
        expires_at: "2026-01-16T00:00:00.000Z",
        reason: "hold",
      },
    ]);
  });
});
