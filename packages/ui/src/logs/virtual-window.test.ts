import { describe, expect, it } from "vitest";
import { computeWindow, MAX_SCROLL_PX, scrollTopForRow } from "./virtual-window.ts";

describe("computeWindow", () => {
  it("renders only the rows in view plus overscan", () => {
    const w = computeWindow({ rowCount: 10_000, rowHeight: 20, scrollTop: 2000, viewportHeight: 400, overscan: 10 });
    expect(w).toEqual({ start: 90, end: 131, totalHeight: 200_000, offsetY: 1800 });
  });

  it("maps a huge log proportionally onto a capped scroll height and reaches the last row", () => {
    const rows = 3_000_000;
    const top = computeWindow({ rowCount: rows, rowHeight: 20, scrollTop: 0, viewportHeight: 600, overscan: 5 });
    expect(top.start).toBe(0);
    expect(top.totalHeight).toBe(MAX_SCROLL_PX);
    const bottom = computeWindow({
      rowCount: rows,
      rowHeight: 20,
      scrollTop: MAX_SCROLL_PX - 600,
      viewportHeight: 600,
      overscan: 5,
    });
    expect(bottom.end).toBe(rows);
    expect(bottom.end - bottom.start).toBeLessThan(50);
    const mid = computeWindow({
      rowCount: rows,
      rowHeight: 20,
      scrollTop: (MAX_SCROLL_PX - 600) / 2,
      viewportHeight: 600,
      overscan: 0,
    });
    expect(Math.abs(mid.start - rows / 2)).toBeLessThan(50);
  });

  it("scrollTopForRow puts the row in view, in both regimes", () => {
    for (const rows of [5_000, 3_000_000]) {
      for (const target of [0, 1234, rows - 1]) {
        const geo = { rowCount: rows, rowHeight: 20, viewportHeight: 600 };
        const w = computeWindow({ ...geo, scrollTop: scrollTopForRow(target, geo), overscan: 0 });
        expect(target).toBeGreaterThanOrEqual(w.start);
        expect(target).toBeLessThan(w.end);
      }
    }
  });
});
