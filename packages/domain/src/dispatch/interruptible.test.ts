import { describe, expect, it } from "vitest";
import { interruptibleRefusal, interruptibleShare, INTERRUPTIBLE_TARGET_SHARE } from "./interruptible.ts";

describe("interruptible capacity", () => {
  it("admits background work only, and never a job a reclaim already hit", () => {
    expect(interruptibleRefusal({ tier: "background", excluded: false })).toBeNull();
    expect(interruptibleRefusal({ tier: "interactive", excluded: false })).toBe("not_background");
    expect(interruptibleRefusal({ tier: "scheduled", excluded: false })).toBe("not_background");
    expect(interruptibleRefusal({ tier: "background", excluded: true })).toBe("reclaimed_before");
  });

  it("computes the share of eligible background minutes and compares it with the 55% target", () => {
    expect(interruptibleShare({ eligibleMinutes: 100, interruptibleMinutes: 60 })).toEqual({
      eligibleMinutes: 100,
      interruptibleMinutes: 60,
      share: 0.6,
      target: INTERRUPTIBLE_TARGET_SHARE,
      meetsTarget: true,
    });
    expect(interruptibleShare({ eligibleMinutes: 100, interruptibleMinutes: 54.9 }).meetsTarget).toBe(false);
    expect(interruptibleShare({ eligibleMinutes: 100, interruptibleMinutes: 55 }).meetsTarget).toBe(true);
  });

  it("has no share without eligible work, and never a share above 1", () => {
    expect(interruptibleShare({ eligibleMinutes: 0, interruptibleMinutes: 0 })).toMatchObject({
      share: null,
      meetsTarget: null,
    });
    expect(interruptibleShare({ eligibleMinutes: 10, interruptibleMinutes: 12 }).share).toBe(1);
  });
});
