// A vitest reporter that prints the ten slowest test files at the end of `npm test`, so a suite that
// grows slow shows in every run's log instead of being found when CI's budget is blown (issue 32).
// It reads each module's own diagnostic, which (unlike the JSON reporter's per-file times) counts
// the imports and the beforeAll hooks where the e2e files start their platforms.
import { relative } from "node:path";
import type { Reporter, TestModule } from "vitest/node";

export interface FileTime {
  file: string;
  seconds: number;
}

/** The `count` slowest files, one line each, slowest first. */
export function formatSlowest(times: readonly FileTime[], count: number): string[] {
  return [...times]
    .sort((a, b) => b.seconds - a.seconds)
    .slice(0, count)
    .map((t) => `${t.seconds.toFixed(1).padStart(7)} s  ${t.file}`);
}

export default class SlowestFilesReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const times = testModules.map((m) => {
      const d = m.diagnostic();
      const ms = d.prepareDuration + d.collectDuration + d.setupDuration + d.duration;
      return { file: relative(process.cwd(), m.moduleId), seconds: ms / 1000 };
    });
    if (times.length === 0) return;
    console.log("\nslowest test files (imports, hooks and tests):");
    for (const line of formatSlowest(times, 10)) console.log(line);
  }
}
