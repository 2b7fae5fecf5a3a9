// Log pipeline benchmarks (issue 4; figures in docs/benchmarks.md):
//   ingest   sustained MB/s into the durable store (PostgreSQL, fsync on), HTTP vs in-process
//   latency  write-in-sandbox -> byte-at-SSE-client, p50/p95 (real host agent, real EventSource)
//   viewers  200 concurrent SSE viewers of one running job, all exact
// Usage: npm run bench -- logs [ingest|latency|viewers ...] [--rounds 3]
import { writeFile } from "node:fs/promises";
import { benchIngest } from "./ingest.ts";
import { benchLatency } from "./latency.ts";
import { progress, LogBenchStack } from "./stack.ts";
import { benchViewers } from "./viewers.ts";

const args = process.argv.slice(2);
const flag = (name: string, fallback: number) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const rounds = flag("rounds", 3);
const picked = args.filter((a, i) => !a.startsWith("--") && !args[i - 1]?.startsWith("--"));
const which = picked.length > 0 ? picked : ["ingest", "latency", "viewers"];

async function main(): Promise<void> {
  const s = new LogBenchStack();
  const results: Record<string, unknown> = { machine: { cpus: (await import("node:os")).cpus().length }, rounds };
  try {
    await s.start({
      KILN_LEASE_TTL_MS: "30000",
      KILN_HEARTBEAT_MS: "5000",
      KILN_LOG_MAX_BYTES: String(2 ** 40),
      KILN_LOG_JOURNAL_MAX_BYTES: String(2 ** 40),
      KILN_LOG_DB_POOL: "16",
    });
    if (which.includes("ingest"))
      results.ingest = await benchIngest(s, { rounds, seconds: flag("seconds", 15), writers: flag("writers", 8) });
    if (which.includes("latency") || which.includes("viewers")) {
      s.stack.spawnAgent(s.agentToken, { KILN_AGENT_SLOTS: "2", KILN_CLAIM_WAIT_MS: "2000" });
    }
    if (which.includes("latency")) results.latency = await benchLatency(s, { rounds, lines: flag("lines", 300) });
    if (which.includes("viewers"))
      results.viewers = await benchViewers(s, {
        rounds,
        viewers: flag("viewers", 200),
        lines: flag("viewer-lines", 2000),
      });
  } finally {
    await s.stop();
  }
  const json = JSON.stringify(results, null, 2);
  console.log(json);
  await writeFile(new URL("./last-run.json", import.meta.url), `${json}\n`);
  progress("done");
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
