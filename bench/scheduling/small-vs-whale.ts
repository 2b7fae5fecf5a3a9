// The scenario: a 40-slot pool, org A pushes 900 one-second jobs at t=0, org B pushes 5
// one second later (and a variant at 1.5 s, when the pool is full). When do B's jobs start under fair vs fifo? Decisions come from the domain's
// PoolScheduler; the ETA B is shown comes from planQueue over the same state.
//   tsx bench/scheduling/small-vs-whale.ts
import { PoolScheduler, planQueue, type DispatchPolicy, type Entitlement, type QueuedJob } from "@kiln/domain/dispatch";

const CAPACITY = 40;
const JOB_MS = 1_000;

interface Scenario {
  name: string;
  bArrivesMs: number;
  entitlements: Entitlement[];
}

const ENTITLED: Entitlement[] = [
  { orgId: "A", slots: 30, weight: 1 },
  { orgId: "B", slots: 10, weight: 1 },
];
const SCENARIOS: Scenario[] = [
  { name: "B at 1.0 s, no entitlement rows", bArrivesMs: 1_000, entitlements: [] },
  { name: "B at 1.0 s, A entitled 30, B 10", bArrivesMs: 1_000, entitlements: ENTITLED },
  { name: "B at 1.5 s (pool full), A entitled 30, B 10", bArrivesMs: 1_500, entitlements: ENTITLED },
];

function job(orgId: string, i: number, at: number): QueuedJob {
  return {
    jobId: `${orgId}${String(i).padStart(3, "0")}`,
    orgId,
    runId: `${orgId}-run`,
    tier: "interactive",
    enqueuedAt: at,
    runProgress: 0,
    predecessorsDone: true,
  };
}

function run(policy: DispatchPolicy, scenario: Scenario) {
  const sched = new PoolScheduler({ policy, capacity: CAPACITY, entitlements: scenario.entitlements });
  const ends = new Map<number, string[]>();
  const starts = new Map<string, number>();
  let shownToB: { jobId: string; position: number; etaMs: number; reason: string }[] = [];
  for (let i = 0; i < 900; i++) sched.enqueue(job("A", i, 0));
  let bPending = true;
  for (
    let t = 0;
    sched.queuedCount > 0 || ends.size > 0 || bPending;
    t = Math.min(...ends.keys(), bPending ? scenario.bArrivesMs : Infinity)
  ) {
    for (const id of ends.get(t) ?? []) sched.finish(id);
    ends.delete(t);
    if (bPending && t === scenario.bArrivesMs) {
      bPending = false;
      for (let i = 0; i < 5; i++) sched.enqueue(job("B", i, t));
      const plan = planQueue(sched.snapshot(t), { policy, expectedDurationMs: () => JOB_MS });
      shownToB = [...plan].filter(([id]) => id.startsWith("B")).map(([jobId, e]) => ({ jobId, ...e }));
    }
    for (let d = sched.next(t); d.pick; d = sched.next(t)) {
      sched.start(d.pick.jobId, t);
      starts.set(d.pick.jobId, t);
      ends.set(t + JOB_MS, [...(ends.get(t + JOB_MS) ?? []), d.pick.jobId]);
    }
  }
  const bStarts = [...starts].filter(([id]) => id.startsWith("B")).map(([, at]) => (at - scenario.bArrivesMs) / 1000);
  const aLast = Math.max(...[...starts].filter(([id]) => id.startsWith("A")).map(([, at]) => at)) / 1000;
  return {
    policy,
    scenario: scenario.name,
    bWaitSeconds: bStarts,
    bEtaShownSeconds: shownToB.map((e) => (e.etaMs - scenario.bArrivesMs) / 1000),
    bPositionsShown: shownToB.map((e) => e.position),
    bReasonsShown: shownToB.map((e) => e.reason),
    aLastStartSeconds: aLast,
  };
}

const results = SCENARIOS.flatMap((s) => (["fair", "fifo"] as const).map((p) => run(p, s)));
console.log(JSON.stringify(results, null, 2));
console.log();
console.log(
  "| scenario | policy | B's 5 jobs wait (s) | ETA shown to B at submit (s) | positions shown | A's last job starts (s) |",
);
console.log("| --- | --- | --- | --- | --- | ---: |");
for (const r of results) {
  console.log(
    `| ${r.scenario} | ${r.policy} | ${r.bWaitSeconds.join(", ")} | ${r.bEtaShownSeconds.join(", ")} | ${r.bPositionsShown.join(", ")} | ${r.aLastStartSeconds} |`,
  );
}
