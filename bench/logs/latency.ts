// Write-in-sandbox -> byte-at-SSE-client latency: a real host agent runs a step that prints
// "t <wall clock ns>" every 50 ms; a real EventSource client records when each line arrives.
// Everything runs on this one machine, so both ends read the same clock.
import { percentile, median } from "../lib/stats.ts";
import { followLog } from "./sse-client.ts";
import { progress, type LogBenchStack } from "./stack.ts";

export async function benchLatency(
  s: LogBenchStack,
  opts: { rounds: number; lines: number },
): Promise<Record<string, unknown>> {
  const rounds = [];
  for (let round = 0; round < opts.rounds; round++) {
    progress(`latency round ${round + 1}/${opts.rounds}: ${opts.lines} lines at 20/s`);
    const workflow = `version: 1\njobs:\n  - name: ticker\n    steps:\n      - |\n        i=0\n        while [ $i -lt ${opts.lines} ]; do i=$((i+1)); echo "t $(date +%s%N) line $i"; sleep 0.05; done\n`;
    const { runId, jobId } = await s.runWorkflow(workflow);
    const followed = followLog(s.stack.base, jobId, s.apiToken);
    const outcome = await s.waitForRun(runId);
    const f = await followed;
    if (outcome !== "success" || f.terminal !== "log.sealed" || f.latenciesMs.length !== opts.lines) {
      throw new Error(
        `latency round failed: outcome ${outcome}, terminal ${f.terminal}, ${f.latenciesMs.length}/${opts.lines} lines`,
      );
    }
    rounds.push({
      p50: percentile(f.latenciesMs, 50),
      p95: percentile(f.latenciesMs, 95),
      p99: percentile(f.latenciesMs, 99),
      max: Math.max(...f.latenciesMs),
    });
    progress(`  ${JSON.stringify(rounds[rounds.length - 1])}`);
  }
  return { rounds, p50MedianMs: median(rounds.map((r) => r.p50)), p95MedianMs: median(rounds.map((r) => r.p95)) };
}
