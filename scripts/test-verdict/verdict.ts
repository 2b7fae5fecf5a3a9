// The verdict of `npm test`, read from vitest's JSON results file rather than only from its exit
// code: a library's signal handler calling process.exit(0) during teardown once turned a red run
// green here.
import { existsSync, readFileSync } from "node:fs";

export interface VitestResults {
  numPassedTests?: number;
  numFailedTests?: number;
  numPendingTests?: number;
  numFailedTestSuites?: number;
  success?: boolean;
}

export interface Verdict {
  ok: boolean;
  summary: string;
}

export function judge(results: VitestResults): Verdict {
  const failedTests = results.numFailedTests ?? 0;
  const failedSuites = results.numFailedTestSuites ?? 0;
  const summary = `tests: ${results.numPassedTests ?? 0} passed, ${failedTests} failed, ${results.numPendingTests ?? 0} skipped; suites failed: ${failedSuites}`;
  return { ok: failedTests + failedSuites === 0 && results.success !== false, summary };
}

function main(): void {
  const file = process.argv[2] ?? ".vitest-results.json";
  if (!existsSync(file)) {
    console.error("no test results written");
    process.exit(1);
  }
  const results = JSON.parse(readFileSync(file, "utf8")) as VitestResults;
  const verdict = judge(results);
  console.log(verdict.summary);
  process.exit(verdict.ok ? 0 : 1);
}

if (import.meta.url === `file://${process.argv[1]}`) main();
