// `npm run chaos -- [flags]`; every flag has a default so the bare command is the documented soak.
import { parseArgs } from "node:util";

export interface ChaosArgs {
  runs: number;
  durationS: number;
  seed: number;
  webs: number;
  workers: number;
  agents: number;
  leaseTtlMs: number;
  heartbeatMs: number;
  gapMs: [number, number];
  faults: boolean;
  maxInfraRatio: number | null;
}

const USAGE = `usage: npm run chaos -- [--runs 200] [--duration-s 900] [--seed N] [--webs 2] [--workers 1] [--agents 3]
       [--lease-ttl-ms 8000] [--heartbeat-ms 2000] [--gap-ms 2000-5000] [--no-faults] [--max-infra-ratio 0.05]`;

export function parseChaosArgs(argv: string[]): ChaosArgs {
  const { values } = parseArgs({
    args: argv,
    options: {
      runs: { type: "string", default: "200" },
      "duration-s": { type: "string", default: "900" },
      seed: { type: "string" },
      webs: { type: "string", default: "2" },
      workers: { type: "string", default: "1" },
      agents: { type: "string", default: "3" },
      "lease-ttl-ms": { type: "string", default: "8000" },
      "heartbeat-ms": { type: "string", default: "2000" },
      "gap-ms": { type: "string", default: "2000-5000" },
      "no-faults": { type: "boolean", default: false },
      "max-infra-ratio": { type: "string" },
      help: { type: "boolean", default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  const int = (name: string, v: string | undefined, min: number) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer >= ${min}\n${USAGE}`);
    return n;
  };
  const gap = /^(\d+)-(\d+)$/.exec(values["gap-ms"] ?? "");
  if (!gap) throw new Error(`--gap-ms must look like 2000-5000\n${USAGE}`);
  return {
    runs: int("runs", values.runs, 1),
    durationS: int("duration-s", values["duration-s"], 30),
    seed: values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : int("seed", values.seed, 0),
    webs: int("webs", values.webs, 1),
    workers: int("workers", values.workers, 1),
    agents: int("agents", values.agents, 1),
    leaseTtlMs: int("lease-ttl-ms", values["lease-ttl-ms"], 500),
    heartbeatMs: int("heartbeat-ms", values["heartbeat-ms"], 100),
    gapMs: [Number(gap[1]), Number(gap[2])],
    faults: !values["no-faults"],
    maxInfraRatio: values["max-infra-ratio"] === undefined ? null : Number(values["max-infra-ratio"]),
  };
}
