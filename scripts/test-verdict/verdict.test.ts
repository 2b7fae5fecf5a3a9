import { describe, expect, it } from "vitest";
import { formatSlowest } from "./slowest-files-reporter.js";
import { judge } from "./verdict.js";

describe("npm test's verdict", () => {
  it("is red when a file failed to load even though no test failed", () => {
    const v = judge({ numPassedTests: 10, numFailedTests: 0, numFailedTestSuites: 1, success: false });
    expect(v.ok).toBe(false);
    expect(v.summary).toBe("tests: 10 passed, 0 failed, 0 skipped; suites failed: 1");
  });

  it("is red when vitest says the run failed, whatever the counts", () => {
    expect(judge({ numPassedTests: 3, success: false }).ok).toBe(false);
  });

  it("is green only with no failure at all", () => {
    expect(judge({ numPassedTests: 3, numFailedTests: 0, numFailedTestSuites: 0, success: true }).ok).toBe(true);
    expect(judge({ numPassedTests: 3, numFailedTests: 1, success: true }).ok).toBe(false);
  });
});

describe("the slowest-files reporter", () => {
  it("lists the slowest files first, at most the count asked for", () => {
    const lines = formatSlowest(
      [
        { file: "e2e/a.test.ts", seconds: 2 },
        { file: "e2e/b.test.ts", seconds: 95.5 },
        { file: "packages/c.test.ts", seconds: 30 },
      ],
      2,
    );
    expect(lines).toEqual(["   95.5 s  e2e/b.test.ts", "   30.0 s  packages/c.test.ts"]);
  });
});
