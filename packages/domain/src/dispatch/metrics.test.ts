import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { jainIndex, percentile } from "./metrics.ts";

describe("jainIndex", () => {
  it("is 1 for equal shares and 1/n when one takes everything", () => {
    expect(jainIndex([3, 3, 3, 3])).toBe(1);
    expect(jainIndex([1, 0, 0, 0])).toBe(0.25);
    expect(jainIndex([])).toBe(1);
    expect(jainIndex([0, 0])).toBe(1);
  });

  it("does not lose tiny or huge shares to underflow or overflow", () => {
    // fast-check found [0, 2.2e-163]: its square underflowed to 0 and the index read 1 instead of 1/2.
    expect(jainIndex([0, 2.245325406718041e-163])).toBe(0.5);
    expect(jainIndex([0, 1e300])).toBe(0.5);
    expect(jainIndex([Number.MIN_VALUE, Number.MIN_VALUE])).toBe(1);
  });

  it("lies in [1/n, 1] and ignores scale", () => {
    fc.assert(
      fc.property(fc.array(fc.double({ min: 0, max: 1e6, noNaN: true }), { minLength: 1, maxLength: 50 }), (xs) => {
        const j = jainIndex(xs);
        expect(j).toBeGreaterThanOrEqual(1 / xs.length - 1e-9);
        expect(j).toBeLessThanOrEqual(1 + 1e-9);
        expect(jainIndex(xs.map((x) => x * 7))).toBeCloseTo(j, 9);
      }),
    );
  });
});

describe("percentile", () => {
  it("uses nearest rank and leaves the input alone", () => {
    const xs = [5, 1, 4, 2, 3];
    expect(percentile(xs, 50)).toBe(3);
    expect(percentile(xs, 0)).toBe(1);
    expect(percentile(xs, 100)).toBe(5);
    expect(percentile(xs, 95)).toBe(5);
    expect(xs).toEqual([5, 1, 4, 2, 3]);
    expect(percentile([], 50)).toBeNaN();
  });
});
