// Discrete-event simulation of fair vs FIFO dispatch (issue 9). Every decision goes through the
// domain's PoolScheduler, the code chooseNext wraps.
//   tsx bench/scheduling/simulate.ts [--orgs 600] [--jobs 100000] [--seed 1] [--policy fair|fifo|both]
//     [--hours 6] [--load 0.9] [--min-slots 1] [--eta-samples 11] [--json out.json]
import { writeFileSync } from "node:fs";
import type { DispatchPolicy } from "@kiln/domain/dispatch";
import { simulate } from "./engine.ts";
import { markdownTable, summarise, type PolicySummary } from "./report.ts";
import { DEFAULT_PARAMS, generateWorkload } from "./workload.ts";

function parseArgs(argv: string[]): Map<string, string> {
  const args = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const key = argv[i];
    if (key?.startsWith("--")) args.set(key.slice(2), argv[i + 1] ?? "");
  }
  return args;
}

function numberArg(args: Map<string, string>, key: string, fallback: number): number {
  const raw = args.get(key);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value)) throw new Error(`--${key} must be a number, got ${raw}`);
  return value;
}

const args = parseArgs(process.argv.slice(2));
const policyArg = args.get("policy") ?? "both";
if (!["fair", "fifo", "both"].includes(policyArg)) throw new Error("--policy must be fair, fifo or both");
const policies: DispatchPolicy[] = policyArg === "both" ? ["fair", "fifo"] : [policyArg as DispatchPolicy];

const params = {
  ...DEFAULT_PARAMS,
  orgs: numberArg(args, "orgs", DEFAULT_PARAMS.orgs),
  jobs: numberArg(args, "jobs", DEFAULT_PARAMS.jobs),
  seed: numberArg(args, "seed", DEFAULT_PARAMS.seed),
  horizonMs: numberArg(args, "hours", DEFAULT_PARAMS.horizonMs / 3_600_000) * 3_600_000,
  targetLoad: numberArg(args, "load", DEFAULT_PARAMS.targetLoad),
  minSlots: numberArg(args, "min-slots", DEFAULT_PARAMS.minSlots),
};
const etaSamples = numberArg(args, "eta-samples", 11);

const genStart = performance.now();
const workload = generateWorkload(params);
const classes = ["small", "medium", "large"].map((cls) => {
  const orgs = workload.orgs.filter((o) => o.cls === cls);
  return {
    cls,
    orgs: orgs.length,
    jobs: orgs.reduce((a, o) => a + o.jobs, 0),
    entitledSlots: orgs.reduce((a, o) => a + o.entitlement.slots, 0),
  };
});
const biggestRun = Math.max(...workload.runs.map((r) => r.jobs.length));
const workloadInfo = {
  params,
  capacity: workload.capacity,
  runs: workload.runs.length,
  biggestRun,
  meanDurationS: Math.round(workload.meanDurationMs / 100) / 10,
  burstingOrgs: workload.orgs.filter((o) => o.burst).length,
  entitledSlots: workload.orgs.reduce((a, o) => a + o.entitlement.slots, 0),
  classes,
  generationSeconds: Math.round(performance.now() - genStart) / 1000,
};

const summaries: PolicySummary[] = policies.map((p) => summarise(workload, simulate(workload, p, etaSamples)));
const result = { workload: workloadInfo, summaries };
const json = JSON.stringify(result, null, 2);
const jsonPath = args.get("json");
if (jsonPath) writeFileSync(jsonPath, `${json}\n`);
console.log(json);
console.log();
console.log(markdownTable(summaries));
