// The soak itself: start a stack, drive the workload while the injector kills and freezes processes
// and cuts database sessions, stop the faults, let everything settle, then check every invariant.
import { existsSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { REPO_ROOT } from "@kiln/testkit";
import pg from "pg";
import type { ChaosArgs } from "./args.ts";
import { Balancer } from "./balancer.ts";
import { runChecks, type CheckRow } from "./checks.ts";
import { Driver, type TriggerRecord } from "./driver.ts";
import { FaultInjector } from "./faults.ts";
import { Random } from "./random.ts";
import { formatCounts } from "./report.ts";
import { sleep, Stack } from "./stack.ts";
import { pickKind, seedKinds, type Kind } from "./workload.ts";

export interface SoakResult {
  rows: CheckRow[];
  summary: string[];
}

export async function runSoak(args: ChaosArgs, log: (line: string) => void): Promise<SoakResult> {
  const stack = new Stack({
    env: {
      KILN_LEASE_TTL_MS: String(args.leaseTtlMs),
      KILN_HEARTBEAT_MS: String(args.heartbeatMs),
      // Archive logs while jobs still write them, so replays cross journal and archive under faults.
      KILN_LOG_ARCHIVE_MS: "1000",
      KILN_LOG_SEGMENT_BYTES: String(256 * 1024),
      KILN_ARTIFACT_PART_MIB: "5",
    },
  });
  const balancer = new Balancer(() => stack.liveWebPorts());
  let pool: pg.Pool | null = null;
  try {
    const t0 = Date.now();
    await stack.start();
    const features = await detectFeatures(stack.dbUrl);
    const kinds: Kind[] = ["ok", "fail", "cancel", "biglog", ...(features.artifacts ? (["artifact"] as const) : [])];
    const tenants = await seedKinds(stack, kinds);
    const webs = Array.from({ length: args.webs }, (_, i) => `web-${i + 1}`);
    const workers = Array.from({ length: args.workers }, (_, i) => `workers-${i + 1}`);
    const agents = Array.from({ length: args.agents }, (_, i) => `agent-${i + 1}`);
    for (const w of webs) await stack.startWeb(w);
    const base = await balancer.start();
    for (const w of workers) stack.startWorkers(w);
    const agentToken = tenants.get("ok")!.agentToken;
    for (const a of agents) stack.startAgent(a, agentToken, { controlUrl: base, env: { KILN_CLAIM_WAIT_MS: "2000" } });
    log(
      `stack up in ${((Date.now() - t0) / 1000).toFixed(0)} s: ${webs.length} web, ${workers.length} workers, ${agents.length} agents; logs ${features.logs ? "on" : "off"}, artifacts ${features.artifacts ? "on" : "off"}`,
    );

    const start = Date.now();
    const end = start + args.durationS * 1000;
    const rng = new Random(args.seed);
    const driver = new Driver(base, tenants, () => end);
    const injector = new FaultInjector(
      stack,
      new Random(args.seed + 1),
      { webs, workers, agents, leaseTtlMs: args.leaseTtlMs, gapMs: args.gapMs },
      log,
    );
    const faults = args.faults ? injector.run() : Promise.resolve();

    const pending = driveWorkload(driver, rng, kinds, args, start, log);
    await sleep(Math.max(0, start + args.durationS * 500 - Date.now()));
    await injector.stop();
    await faults;
    await injector.reviveUnexpected();
    log(
      `faults stopped after ${((Date.now() - start) / 1000).toFixed(0)} s; ${formatCounts("injected", injector.counts)}`,
    );
    await pending;
    const settled = await waitTerminal(stack.dbUrl, end, log);
    await sleep(Math.min(10_000, Math.max(0, end - Date.now())));
    await injector.reviveUnexpected();

    pool = new pg.Pool({ connectionString: stack.dbUrl, max: 4 });
    const tokens = new Map([...tenants].map(([k, t]) => [k, t.token]));
    const rows = await runChecks({ pool, base, records: driver.records, tokens, features });
    rows.splice(3, 0, {
      name: "processes alive at the end (none exited on its own)",
      checked: webs.length + workers.length + agents.length,
      violations: injector.unexpectedExits.length,
      detail: injector.unexpectedExits.length ? `exited on their own: ${injector.unexpectedExits.join(", ")}` : "",
      info: true,
    });
    if (args.maxInfraRatio !== null) {
      const ratio = rows.find((r) => r.name.startsWith("infrastructure-failure ratio"));
      if (ratio && ratio.checked > 0 && ratio.violations / ratio.checked > args.maxInfraRatio) ratio.info = false;
    }
    const failed = rows.some((r) => !r.info && !r.na && r.violations > 0);
    const logDir = path.join(os.tmpdir(), `kiln-chaos-${args.seed}`);
    if (failed) await stack.dumpLogs(logDir);
    const summary = [
      `seed ${args.seed}; ${driver.records.length} triggers in ${((settled - start) / 1000).toFixed(0)} s (bound ${args.durationS} s)`,
      formatCounts(
        "triggers by kind",
        countBy(driver.records, (r) => r.kind),
      ),
      formatCounts("run outcomes", await outcomes(pool)),
      formatCounts("faults injected", { ...injector.counts, "db sessions terminated": injector.sessionsTerminated }),
      formatCounts("client retries", {
        "transport errors": driver.stats.transportErrors,
        "5xx answers": driver.stats.unavailable,
        "409 in-flight": driver.stats.inFlight,
      }),
      ...(failed ? [`process logs: ${logDir}`] : []),
    ];
    return { rows, summary };
  } finally {
    await pool?.end().catch(() => undefined);
    await balancer.stop();
    await stack.stop();
  }
}

/** Triggers `runs` runs spread over the first 40% of the duration; cancels and duplicate deliveries as it goes. */
async function driveWorkload(
  driver: Driver,
  rng: Random,
  kinds: Kind[],
  args: ChaosArgs,
  start: number,
  log: (l: string) => void,
): Promise<void> {
  const spacing = (args.durationS * 400) / args.runs;
  const tasks: Promise<void>[] = [];
  for (let i = 0; i < args.runs; i++) {
    await sleep(Math.max(0, start + i * spacing - Date.now()));
    const kind = pickKind(rng, kinds);
    const via = rng.next() < 0.5 ? "webhook" : "manual";
    const cancelAfter = rng.int(500, 4000);
    const replay = rng.next() < 0.2;
    tasks.push(
      (async () => {
        const rec: TriggerRecord = await driver.trigger(`chaos-${args.seed}-${i}`, kind, via);
        if (!rec.accepted) return;
        if (kind === "cancel") {
          await sleep(cancelAfter);
          await driver.cancel(rec);
        }
        if (replay) await driver.replay(rec);
      })(),
    );
  }
  await Promise.all(tasks);
  log(`all ${args.runs} triggers answered`);
}

/** Polls until no run is open or the deadline passes; returns when it stopped waiting. */
async function waitTerminal(url: string, deadline: number, log: (l: string) => void): Promise<number> {
  const c = new pg.Pool({ connectionString: url, max: 1 });
  try {
    for (;;) {
      const r = await c
        .query<{ n: string }>("SELECT count(*) AS n FROM workflow_run WHERE status <> 'completed'")
        .catch(() => null);
      if (r && Number(r.rows[0]?.n) === 0) return Date.now();
      if (Date.now() > deadline) {
        log(
          `deadline reached with ${r?.rows[0]?.n ?? "?"} runs still open:\n${await describeOpen(c).catch((e: unknown) => String(e))}`,
        );
        return Date.now();
      }
      await sleep(1000);
    }
  } finally {
    await c.end();
  }
}

/** Where the open runs are stuck, for the report: run status, then each job's status and attempts. */
async function describeOpen(c: pg.Pool): Promise<string> {
  const r = await c.query<{ id: string; status: string; age_s: number; jobs: string }>(`
    SELECT r.id, r.status, extract(epoch FROM now() - r.created_at)::int AS age_s,
      coalesce(string_agg(j.name || ':' || j.status || coalesce('/' || j.outcome, '') || ' [' ||
        (SELECT coalesce(string_agg(a.epoch || ':' || a.status || coalesce('/' || a.cause, coalesce('/' || a.outcome, '')), ' ' ORDER BY a.epoch), '')
         FROM attempt a WHERE a.job_id = j.id) || ']' ||
        CASE WHEN j.next_attempt_at > now() THEN ' next in ' || extract(epoch FROM j.next_attempt_at - now())::int || 's' ELSE '' END, ', ' ORDER BY j.job_index), '-') AS jobs
    FROM workflow_run r LEFT JOIN job_run j ON j.run_id = r.id WHERE r.status <> 'completed' GROUP BY r.id ORDER BY r.created_at LIMIT 12`);
  const lines = r.rows.map((x) => `  ${x.id} ${x.status} (age ${x.age_s} s): ${x.jobs}`);
  // A run still pending was never frozen: show its freeze requests and what pg-boss made of them.
  const freezes = await c.query<{ run_id: string; state: string; retry_count: number; output: unknown }>(`
    SELECT data->>'runId' AS run_id, state, retry_count, output FROM pgboss.job
    WHERE name = 'run-freeze' AND data->>'runId' IN (SELECT id::text FROM workflow_run WHERE status = 'pending') ORDER BY created_on LIMIT 12`);
  for (const f of freezes.rows)
    lines.push(`  freeze ${f.run_id}: ${f.state}, retries ${f.retry_count}, ${JSON.stringify(f.output).slice(0, 300)}`);
  return lines.join("\n");
}

async function detectFeatures(url: string): Promise<{ logs: boolean; artifacts: boolean }> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const r = await c.query<{ t: string }>(
      "SELECT table_name AS t FROM information_schema.tables WHERE table_name IN ('log_attempt', 'artifact_part')",
    );
    const tables = new Set(r.rows.map((x) => x.t));
    const route = (p: string) => existsSync(path.join(REPO_ROOT, "apps/web/src/app/v1/agent/jobs/[jobId]", p));
    return {
      logs: tables.has("log_attempt") && route("logs/route.ts"),
      artifacts: tables.has("artifact_part") && route("artifacts/uploads/route.ts"),
    };
  } finally {
    await c.end();
  }
}

async function outcomes(pool: pg.Pool): Promise<Record<string, number>> {
  const r = await pool.query<{ outcome: string | null; n: string }>(
    "SELECT outcome, count(*) AS n FROM workflow_run GROUP BY outcome ORDER BY outcome",
  );
  return Object.fromEntries(r.rows.map((x) => [x.outcome ?? "open", Number(x.n)]));
}

function countBy<T>(items: T[], key: (t: T) => string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const i of items) out[key(i)] = (out[key(i)] ?? 0) + 1;
  return out;
}
