// `npm run chaos`: the fault soak (issue 7, docs/reliability.md). Starts its own stack on loopback
// (embedded PostgreSQL, Redis, s3rver, git, web x2 behind a balancer, workers, 3 host agents), drives
// mixed runs while killing and freezing processes and cutting database sessions, then prints a
// table of invariants. Exits 1 on any violation.
import { parseChaosArgs } from "./args.ts";
import { formatTable } from "./report.ts";
import { runSoak } from "./soak.ts";

const args = parseChaosArgs(process.argv.slice(2));
const began = Date.now();
const log = (line: string) => console.log(`[chaos +${((Date.now() - began) / 1000).toFixed(0)}s] ${line}`);
log(
  `runs ${args.runs}, duration bound ${args.durationS} s, seed ${args.seed}, lease ${args.leaseTtlMs} ms, faults ${args.faults ? `every ${args.gapMs.join("-")} ms` : "off"}`,
);

// A hard stop in case something wedges: the duration bound plus start-up and checking time.
const hardStop = setTimeout(
  () => {
    console.error("[chaos] hard time limit reached; aborting");
    process.exit(2);
  },
  (args.durationS + 300) * 1000,
);
hardStop.unref();

try {
  const { rows, summary } = await runSoak(args, log);
  console.log(`\n${formatTable(rows)}\n`);
  for (const line of summary) console.log(line);
  const failed = rows.filter((r) => !r.info && r.violations > 0);
  console.log(failed.length === 0 ? "\nchaos: PASS" : `\nchaos: FAIL (${failed.map((r) => r.name).join("; ")})`);
  process.exit(failed.length === 0 ? 0 : 1);
} catch (e) {
  console.error(`[chaos] failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
  process.exit(2);
}
