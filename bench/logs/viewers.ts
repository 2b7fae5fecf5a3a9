// 200 concurrent SSE viewers of one running job: every viewer must end with exactly the stored
// log (no gap, no duplicate), and we record write -> viewer latency across all of them.
import { median, percentile } from "../lib/stats.ts";
import { followLog } from "./sse-client.ts";
import { progress, type LogBenchStack } from "./stack.ts";

export async function benchViewers(
  s: LogBenchStack,
  opts: { rounds: number; viewers: number; lines: number },
): Promise<Record<string, unknown>> {
  const rounds = [];
  for (let round = 0; round < opts.rounds; round++) {
    progress(`viewers round ${round + 1}/${opts.rounds}: ${opts.viewers} viewers, ${opts.lines} lines at ~100/s`);
    const workflow = `version: 1\njobs:\n  - name: watched\n    env:\n      PAD: "${"x".repeat(60)}"\n    steps:\n      - |\n        i=0\n        while [ $i -lt ${opts.lines} ]; do i=$((i+1)); echo "t $(date +%s%N) line $i $PAD"; sleep 0.01; done\n`;
    const { runId, jobId } = await s.runWorkflow(workflow);
    const viewers = Array.from({ length: opts.viewers }, () => followLog(s.stack.base, jobId, s.apiToken));
    const outcome = await s.waitForRun(runId);
    const seen = await Promise.all(viewers);
    const raw = Buffer.from(
      await (
        await fetch(`${s.stack.base}/v1/jobs/${jobId}/logs/raw`, { headers: { authorization: `Bearer ${s.apiToken}` } })
      ).arrayBuffer(),
    );
    const exact = seen.filter(
      (v) => v.stdout.equals(raw) && v.terminal === "log.sealed" && v.ids.every((id, i) => id === `1:${i}`),
    ).length;
    const lat = seen.flatMap((v) => v.latenciesMs);
    rounds.push({
      outcome,
      viewers: opts.viewers,
      exactCopies: exact,
      bytes: raw.length,
      events: seen[0]?.ids.length ?? 0,
      p50: percentile(lat, 50),
      p95: percentile(lat, 95),
      p99: percentile(lat, 99),
    });
    progress(`  ${JSON.stringify(rounds[rounds.length - 1])}`);
    if (exact !== opts.viewers) throw new Error(`only ${exact}/${opts.viewers} viewers got the exact log`);
  }
  return { rounds, p50MedianMs: median(rounds.map((r) => r.p50)), p95MedianMs: median(rounds.map((r) => r.p95)) };
}
