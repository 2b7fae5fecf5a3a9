// `npm run bench -- job-profile`: where a trivial job's cost goes (issue 32 item 2), on the stack
// `npm run up` runs (web, workers, 2 host agents on the process driver, PostgreSQL, Redis, S3).
//   CPU:   a burst of --burst one-step jobs; CPU-ms per job of each process tree read from /proc, less
//          the same trees' idle CPU over an equal idle span measured just before (long-polls, ticks).
//   phases: --runs jobs one at a time; wall time per phase from the rows the platform writes itself
//          (run, job, attempt and outbox timestamps; the attempt's phase durations the agent reports).
//   SQL:   pg_stat_statements over the burst: the statements with the most total time, per job.
// Usage: npm run bench -- job-profile [--runs 20] [--burst 100]
// KILN_BENCH_AGENT_PROFILE=<dir>: the host agents run under --cpu-prof (profiles land in <dir> when
// they stop on SIGTERM); `tsx bench/job-profile/top-functions.ts <dir>` summarises them.
import { readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort } from "@kiln/testkit";
import { BenchStack } from "../control-plane/stack.ts";
import { readTreeCpu, type TreeCpu } from "../lib/process-cpu.ts";
import { median } from "../lib/stats.ts";
import { startTrivialWorkload } from "../lib/trivial-workload.ts";

const argOf = (name: string, dflt: number) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) || dflt : dflt;
};
const RUNS = argOf("--runs", 20);
const BURST = argOf("--burst", 100);
const progress = (s: string) => process.stderr.write(`[job-profile] ${s}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const agentProfileDir = process.env.KILN_BENCH_AGENT_PROFILE;
const stack = new BenchStack({
  ...(agentProfileDir ? { stopSignal: "SIGTERM" as const } : {}),
  redis: true,
  s3: "own-process",
  postgresFlags: ["-c", "shared_preload_libraries=pg_stat_statements", "-c", "pg_stat_statements.track=all"],
});
await stack.start(await freePort());
const work = await startTrivialWorkload(stack, {
  agents: 2,
  ...(agentProfileDir ? { agentEnv: { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${agentProfileDir}` } } : {}),
});

function roots(): Record<string, number> {
  const pidOf = (name: string) => stack.platform.proc(name).child.pid ?? 0;
  const pg = Number(
    readFileSync(path.join(stack.platform.dataDir, "postgres", "postmaster.pid"), "utf8").split("\n")[0],
  );
  const s3 = (stack.platform.s3 as { pid?: number } | null)?.pid ?? 0;
  // The embedded Redis is a child of this process.
  const redis = Number(
    readFileSync("/proc/self/task/" + process.pid + "/children", "utf8")
      .trim()
      .split(" ")
      .find((pid) => pid && readFileSync(`/proc/${pid}/comm`, "utf8").trim() === "redis-server") ?? 0,
  );
  return {
    web: pidOf("web"),
    workers: pidOf("workers"),
    "agent-1": pidOf("agent-1"),
    "agent-2": pidOf("agent-2"),
    postgres: pg,
    redis,
    s3,
  };
}

const minus = (a: Record<string, TreeCpu>, b: Record<string, TreeCpu>) =>
  Object.fromEntries(Object.keys(a).map((k) => [k, { own: a[k]!.own - b[k]!.own, tree: a[k]!.tree - b[k]!.tree }]));

try {
  await stack.db.$executeRawUnsafe("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
  progress("warm-up: 5 runs");
  for (let i = 0; i < 5; i++) await work.waitDone([await work.trigger()]);

  // ---- phases, one job at a time
  progress(`phases: ${RUNS} runs one at a time`);
  const ids: { id: string; t0: number }[] = [];
  const firstStep: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t0 = Date.now();
    const id = await work.trigger();
    await work.waitDone([id]);
    firstStep.push((await work.stampOf(id)) - t0);
    ids.push({ id, t0 });
  }
  await sleep(3000); // the attestation of the last run
  const rows = await stack.db.$queryRaw<
    {
      id: string;
      created: number;
      ready: number;
      claimed: number;
      queued_ms: number | null;
      image_ms: number | null;
      dispatch_ms: number | null;
      execution_ms: number | null;
      attempt_finished: number;
      run_finished: number;
      attested: number | null;
    }[]
  >`
    SELECT r.id::text,
           extract(epoch FROM r.created_at) * 1000 AS created,
           extract(epoch FROM j.ready_at) * 1000 AS ready,
           extract(epoch FROM a.claimed_at) * 1000 AS claimed,
           a.queued_ms, a.image_ms, a.dispatch_ms, a.execution_ms,
           extract(epoch FROM a.finished_at) * 1000 AS attempt_finished,
           extract(epoch FROM r.finished_at) * 1000 AS run_finished,
           (SELECT extract(epoch FROM max(at.created_at)) * 1000 FROM attestation at
             WHERE at.run_id = r.id) AS attested
    FROM workflow_run r JOIN job_run j ON j.run_id = r.id JOIN attempt a ON a.job_id = j.id
    WHERE r.id = ANY(${ids.map((x) => x.id)}::uuid[])`;
  const byId = new Map(rows.map((r) => [r.id, r]));
  const phase = (f: (r: (typeof rows)[number], t0: number) => number | null) =>
    median(
      ids
        .map(({ id, t0 }) => {
          const r = byId.get(id);
          return r ? f(r, t0) : null;
        })
        .filter((x): x is number => x !== null && Number.isFinite(x)),
    );
  const phases: [string, number][] = [
    ["admission (trigger request -> run row committed)", phase((r, t0) => Number(r.created) - t0)],
    ["freeze (run row -> job READY)", phase((r) => Number(r.ready) - Number(r.created))],
    ["relay + dispatch wake-up + claim (READY -> attempt row)", phase((r) => Number(r.claimed) - Number(r.ready))],
    ["image / sandbox create (agent-reported image_ms)", phase((r) => r.image_ms)],
    ["checkout, egress proxy, token and secret checks (dispatch_ms)", phase((r) => r.dispatch_ms)],
    ["the step itself (execution_ms)", phase((r) => r.execution_ms)],
    [
      "after the step: artifacts, log flush and seal, sandbox destroy, completion request",
      phase((r) =>
        r.image_ms === null || r.dispatch_ms === null || r.execution_ms === null
          ? null
          : Number(r.attempt_finished) - Number(r.claimed) - r.image_ms - r.dispatch_ms - r.execution_ms,
      ),
    ],
    [
      "completion (attempt finished -> run completed; one transaction when the run has one job)",
      phase((r) => Number(r.run_finished) - Number(r.attempt_finished)),
    ],
    [
      "attestation enqueue -> attestation row (none for a run without artifacts)",
      phase((r) => (r.attested ? Number(r.attested) - Number(r.run_finished) : null)),
    ],
    ["trigger -> the step's own clock", median(firstStep)],
    ["trigger -> run completed", phase((r, t0) => Number(r.run_finished) - t0)],
  ];

  // ---- CPU per job over a burst, less the idle cost of the same span
  const idleMs = 10_000;
  progress(`idle baseline: ${idleMs / 1000} s`);
  const idle0 = readTreeCpu(roots());
  await sleep(idleMs);
  const idle = minus(readTreeCpu(roots()), idle0);
  await stack.db.$executeRawUnsafe("SELECT pg_stat_statements_reset()");
  progress(`burst: ${BURST} jobs`);
  const cpu0 = readTreeCpu(roots());
  const tb = performance.now();
  const burstIds = await Promise.all(Array.from({ length: BURST }, () => work.trigger()));
  await work.waitDone(burstIds);
  await sleep(3000); // trailing attestations and log archiving belong to the jobs
  const spanMs = performance.now() - tb;
  const busy = minus(readTreeCpu(roots()), cpu0);
  const statements = await stack.db.$queryRaw<{ query: string; calls: bigint; total: number; mean: number }[]>`
    SELECT left(regexp_replace(query, '\\s+', ' ', 'g'), 110) AS query, calls,
           total_exec_time AS total, mean_exec_time AS mean
    FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 15`;

  const perJob = (k: string, which: "own" | "tree") => (busy[k]![which] - (idle[k]![which] * spanMs) / idleMs) / BURST;
  const fmt = (x: number) => x.toFixed(1);
  const lines: string[] = [];
  lines.push(
    `### Per-job profile, one run (${new Date().toISOString()}; load average ${os
      .loadavg()
      .map((x) => x.toFixed(1))
      .join(" / ")})`,
  );
  lines.push("", `| phase, median of ${RUNS} one-at-a-time runs | ms |`, "|---|---|");
  for (const [name, ms] of phases) lines.push(`| ${name} | ${Number.isNaN(ms) ? "none" : fmt(ms)} |`);
  lines.push(
    "",
    `| process (burst of ${BURST}, ${fmt(spanMs / 1000)} s; idle CPU subtracted) | CPU-ms per job, process | CPU-ms per job, with its children |`,
    "|---|---|---|",
  );
  for (const k of Object.keys(busy)) lines.push(`| ${k} | ${fmt(perJob(k, "own"))} | ${fmt(perJob(k, "tree"))} |`);
  const total = Object.keys(busy).reduce((s, k) => s + perJob(k, "tree"), 0);
  lines.push(`| all | | ${fmt(total)} |`);
  lines.push(
    "",
    `| statement (pg_stat_statements over the burst) | calls per job | mean ms | total ms per job |`,
    "|---|---|---|---|",
  );
  for (const s of statements)
    lines.push(
      `| \`${s.query.replaceAll("|", "\\|")}\` | ${fmt(Number(s.calls) / BURST)} | ${s.mean.toFixed(2)} | ${fmt(s.total / BURST)} |`,
    );
  console.log(lines.join("\n"));
} finally {
  await stack.stop();
  await work.stop();
}
process.stdout.write("", () => process.exit(0));
