import { describe, expect, it } from "vitest";
import { dueDaysAt, resealKeyAt, shredDay, shredDueAt, shredDueDay } from "./shred-schedule.ts";

describe("shred schedule", () => {
  it("a key of day D with window W dies at the start of D + 1 + W", () => {
    expect(shredDay(new Date("2026-03-01T23:59:59.999Z"))).toBe("2026-03-01");
    expect(shredDueDay("2026-03-01", 14)).toBe("2026-03-16");
    expect(shredDueDay("2026-12-31", 0)).toBe("2027-01-01");
    expect(shredDueDay("2028-02-28", 1)).toBe("2028-03-01"); // leap day counted
    // The last object of D (written at 23:59:59.999) has its full 14 days when the key dies.
    const lastWrite = new Date("2026-03-01T23:59:59.999Z").getTime();
    expect(shredDueAt(shredDueDay("2026-03-01", 14)).getTime() - lastWrite).toBe(14 * 86_400_000 + 1);
  });

  it("is due at its first millisecond, not one before", () => {
    const due = shredDueAt("2026-03-16");
    expect(dueDaysAt(["2026-03-17", "2026-03-16"], new Date(due.getTime() - 1))).toEqual([]);
    expect(dueDaysAt(["2026-03-17", "2026-03-16"], due)).toEqual(["2026-03-16"]);
  });

  it("refuses what is not a calendar day or a whole window", () => {
    expect(() => shredDueDay("2026-02-30", 1)).toThrow(expect.objectContaining({ code: "SHRED.BAD_FORMAT" }));
    expect(() => shredDueDay("2026-03-01", 1.5)).toThrow();
    expect(() => shredDueDay("2026-03-01", -1)).toThrow();
  });

  it("a re-seal writes under today's key when it dies later, else under the first later day's that does", () => {
    const dueOf = (at: Date, w: number) => shredDueAt(shredDueDay(shredDay(at), w));
    const now = new Date("2026-03-14T10:00:00Z");
    // Today's 14-day key dies 2026-03-29, after an old due of 2026-03-16: today is enough.
    expect(resealKeyAt(now, 14, new Date("2026-03-16T00:00:00Z"))).toEqual(now);
    // A 0-day window: today's key dies 2026-03-15, not after 2026-03-16 + 2 days of look-ahead.
    const must = new Date("2026-03-18T00:00:00Z");
    const at = resealKeyAt(now, 0, must);
    expect(dueOf(at, 0).getTime()).toBeGreaterThan(must.getTime());
    // ...and the earliest such day: the day before it would die too soon.
    expect(dueOf(new Date(at.getTime() - 86_400_000), 0).getTime()).toBeLessThanOrEqual(must.getTime());
    expect(shredDay(at)).toBe("2026-03-18");
  });
});
