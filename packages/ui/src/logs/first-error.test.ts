import { describe, expect, it } from "vitest";
import { firstErrorRegion, isErrorLine } from "./first-error.ts";

const numbered = (n: number, at: Record<number, string> = {}) =>
  Array.from({ length: n }, (_, i) => at[i + 1] ?? `line ${i + 1} ok`);

describe("firstErrorRegion", () => {
  it("centres on the first error line, with lines before and after", () => {
    const lines = numbered(100, { 40: "src/app.ts:3:1 - error TS2322: nope", 60: "Error: later" });
    expect(firstErrorRegion(lines)).toEqual({ from: 35, to: 50, match: 40 });
    expect(firstErrorRegion(lines, { before: 2, after: 1 })).toEqual({ from: 38, to: 41, match: 40 });
  });

  it("clips at the log's edges", () => {
    expect(firstErrorRegion(numbered(4, { 2: "FAIL src/a.test.ts" }))).toEqual({ from: 1, to: 4, match: 2 });
  });

  it("falls back to the last 30 lines when nothing looks like an error, and to nothing for an empty log", () => {
    expect(firstErrorRegion(numbered(100))).toEqual({ from: 71, to: 100, match: null });
    expect(firstErrorRegion(numbered(10))).toEqual({ from: 1, to: 10, match: null });
    expect(firstErrorRegion([])).toBeNull();
  });

  it("knows common error shapes and ignores mentions that are not errors", () => {
    for (const line of [
      "npm ERR! code ELIFECYCLE",
      "Traceback (most recent call last):",
      "panic: runtime error: index out of range",
      'Exception in thread "main" java.lang.NullPointerException',
      "sh: 1: ./build.sh: not found: command not found",
      "\u001b[31merror\u001b[0m: could not compile `kiln`",
      "fatal: not a git repository",
    ]) {
      expect(isErrorLine(line), line).toBe(true);
    }
    for (const line of ["Found 0 errors.", "no failures", "errors.go compiled", "all 12 tests passed"]) {
      expect(isErrorLine(line), line).toBe(false);
    }
  });
});
