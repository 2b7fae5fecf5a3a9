import { type ChildProcess, execFile, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { sign } from "@octokit/webhooks-methods";
import { freePort } from "@kiln/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Platform } from "./support/platform.ts";
import { forgeIdOf } from "./support/seed-tenant.ts";

// Metrics black box (issue 33, docs/adr/0043): Debian's real Prometheus scrapes the web app (bearer
// token), a workers process and a host agent while they run real runs, and what it stores is
// compared with what the runs API reports. The web's /metrics refuses a scrape without the token.
const TOKEN = `metrics-${randomUUID()}`;
const p = new Platform({ KILN_METRICS_TOKEN: TOKEN });
const RULES = path.resolve(import.meta.dirname, "../deploy/prometheus/alerts.yml");
const RUNS = 3;

// Two independent jobs: one passes, one fails (a user failure), so outcomes differ within a run.
const WORKFLOW = `version: 1
jobs:
  - name: pass
    steps:
      - echo ok
  - name: fail
    steps:
      - echo failing on purpose; exit 3
`;

let tenant: Awaited<ReturnType<Platform["seedTenant"]>>;
let prom: ChildProcess | null = null;
let promBase = "";
let scratch = "";

async function startPrometheus(targets: { web: string; workers: string; agent: string }): Promise<void> {
  scratch = await mkdtemp(path.join(tmpdir(), "kiln-prom-"));
  const port = await freePort();
  const config = `global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - ${JSON.stringify(RULES)}
scrape_configs:
  - job_name: kiln-web
    authorization: { type: Bearer, credentials: ${JSON.stringify(TOKEN)} }
    static_configs: [{ targets: [${JSON.stringify(targets.web)}] }]
  - job_name: kiln-workers
    static_configs: [{ targets: [${JSON.stringify(targets.workers)}] }]
  - job_name: kiln-agent
    static_configs: [{ targets: [${JSON.stringify(targets.agent)}] }]
`;
  await writeFile(path.join(scratch, "prometheus.yml"), config);
  prom = spawn(
    "/usr/bin/prometheus",
    [
      `--config.file=${path.join(scratch, "prometheus.yml")}`,
      `--storage.tsdb.path=${path.join(scratch, "data")}`,
      `--web.listen-address=127.0.0.1:${port}`,
    ],
    { stdio: "ignore" },
  );
  promBase = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const ok = await fetch(`${promBase}/-/ready`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error("prometheus did not become ready");
}

async function stopPrometheus(): Promise<void> {
  const child = prom;
  if (!child?.pid || child.exitCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  process.kill(child.pid, "SIGTERM");
  await exited;
}

type Vector = { metric: Record<string, string>; value: [number, string] }[];
async function query(q: string): Promise<Vector> {
  const r = await fetch(`${promBase}/api/v1/query?query=${encodeURIComponent(q)}`);
  const body = (await r.json()) as { status: string; data: { result: Vector } };
  if (body.status !== "success") throw new Error(`query ${q} failed: ${JSON.stringify(body)}`);
  return body.data.result;
}

/** Polls `check` until it passes (scrapes are 1 s apart); its last failure is the test's. */
async function eventually(check: () => Promise<void>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

function promtoolCheckMetrics(text: string): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    const child = execFile("/usr/bin/promtool", ["check", "metrics"], (err, stdout, stderr) =>
      resolve({ code: err ? (typeof err.code === "number" ? err.code : -1) : 0, out: stdout + stderr }),
    );
    child.stdin?.end(text);
  });
}

async function push(delivery: string): Promise<string> {
  const body = JSON.stringify({
    ref: "refs/heads/main",
    before: "0".repeat(40),
    after: tenant.git.headSha,
    repository: { full_name: tenant.repoName, name: tenant.repoName.split("/")[1] },
    sender: { login: "dev", id: forgeIdOf("dev") },
    commits: [],
    head_commit: null,
  });
  const r = await fetch(`${p.base}/v1/webhooks/github`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-github-event": "push",
      "x-github-delivery": delivery,
      "x-hub-signature-256": await sign(tenant.secret, body),
    },
    body,
  });
  expect(r.status).toBe(202);
  return ((await r.json()) as { run_id: string }).run_id;
}

beforeAll(async () => {
  await p.start();
  tenant = await p.seedTenant("metrics", { ".kiln/workflow.yaml": WORKFLOW, "README.md": "m\n" }, { member: "dev" });
  const [workersPort, agentPort] = [await freePort(), await freePort()];
  p.startWorkers("workers-metrics", { KILN_METRICS_PORT: String(workersPort) });
  await p.startAgent("agent-metrics", tenant.agentToken, { KILN_METRICS_PORT: String(agentPort) });
  await startPrometheus({
    web: new URL(p.base).host,
    workers: `127.0.0.1:${workersPort}`,
    agent: `127.0.0.1:${agentPort}`,
  });
}, 180_000);
afterAll(async () => {
  await stopPrometheus();
  if (scratch) await rm(scratch, { recursive: true, force: true });
  await p.stop();
});

describe("GET /metrics on the web app's port", () => {
  it("answers 401 without the bearer token or with another, and Prometheus text with it", async () => {
    const none = await fetch(`${p.base}/metrics`);
    expect(none.status).toBe(401);
    expect(((await none.json()) as { error: { code: string } }).error.code).toBe("AUTH.UNAUTHENTICATED");
    const wrong = await fetch(`${p.base}/metrics`, { headers: { authorization: `Bearer ${TOKEN}x` } });
    expect(wrong.status).toBe(401);
    const ok = await fetch(`${p.base}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get("content-type")).toContain("text/plain");
    const text = await ok.text();
    expect(text).toContain("# TYPE kiln_job_outcomes_total counter");
    // promtool parses and lints the exposition: an independent verifier of the format. A parse
    // error fails; the one lint it reports is about prom-client's own Node.js gauges (named
    // *_active_*_total upstream), never about a Kiln metric.
    const check = await promtoolCheckMetrics(text);
    expect(check.out).not.toContain("error");
    const lints = check.out.split("\n").filter((l) => l !== "");
    for (const l of lints)
      expect(l).toMatch(/^kiln_web_nodejs_active_\w+_total non-counter metrics should not have "_total" suffix$/);
    expect(text).toContain("kiln_web_nodejs_active_handles_total");
  });
});

describe("Prometheus scraping a platform that runs real work", () => {
  it("stores job outcomes, phase counts and trigger counts equal to what the API reports", async () => {
    const runIds: string[] = [];
    for (let i = 0; i < RUNS; i++) runIds.push(await push(`metrics-delivery-${i}`));
    expect(new Set(runIds).size).toBe(RUNS);
    const runs = [];
    for (const id of runIds) runs.push(await p.waitForRun(id, tenant.token, (r) => r.status === "completed", 120_000));
    const outcomes = new Map<string, number>();
    let attempts = 0;
    for (const run of runs)
      for (const job of run.jobs as { outcome: string; attempts: unknown[] }[]) {
        outcomes.set(job.outcome, (outcomes.get(job.outcome) ?? 0) + 1);
        attempts += job.attempts.length;
      }
    expect(outcomes.get("success")).toBe(RUNS);
    expect(outcomes.get("user_failure")).toBe(RUNS);

    await eventually(async () => {
      const series = await query('kiln_job_outcomes_total{job="kiln-web"}');
      const stored = Object.fromEntries(series.map((s) => [s.metric.outcome, Number(s.value[1])]));
      expect(Object.keys(stored).sort()).toEqual([
        "blocked_by_policy",
        "cancelled",
        "platform_failure",
        "success",
        "timed_out",
        "user_failure",
      ]);
      for (const [o, n] of Object.entries(stored)) expect(n, o).toBe(outcomes.get(o) ?? 0);
      // The infra-failure ratio the SLO alert reads: no platform failure in this workload.
      // (Its ratio is 0/0 when every job finished before Prometheus's first scrape: the numerator is read.)
      const failures = await query('kiln:job_outcomes:increase1h{outcome="platform_failure"}');
      expect(Number(failures[0]?.value[1])).toBe(0);
      // In-process histograms of the web process (the workers export the same names, at 0).
      const executions = await query('kiln_command_duration_seconds_count{job="kiln-web"}');
      expect(Number(executions[0]?.value[1])).toBe(attempts);
      const triggers = await query('kiln_trigger_persistence_seconds_count{job="kiln-web",trigger="webhook"}');
      expect(Number(triggers[0]?.value[1])).toBe(RUNS);
      const ready = await query('max(kiln_ready_jobs{job="kiln-web"})');
      expect(Number(ready[0]?.value[1])).toBe(0);
    }, 45_000);
  }, 240_000);

  it("scrapes the workers and the host agent on their own ports, and loads the shipped alert rules", async () => {
    await eventually(async () => {
      const up = await query("up");
      const byJob = Object.fromEntries(up.map((s) => [s.metric.job, Number(s.value[1])]));
      expect(byJob).toEqual({ "kiln-web": 1, "kiln-workers": 1, "kiln-agent": 1 });
      expect((await query("kiln_agent_process_cpu_user_seconds_total")).length).toBe(1);
      expect((await query("kiln_workers_process_cpu_user_seconds_total")).length).toBe(1);
    });
    const rules = (await (await fetch(`${promBase}/api/v1/rules`)).json()) as {
      data: { groups: { rules: { name: string; health: string }[] }[] };
    };
    const loaded = rules.data.groups.flatMap((g) => g.rules);
    expect(loaded.length).toBe(13);
    expect(loaded.map((r) => r.name)).toContain("KilnInfraFailureRatioHigh");
    // Nothing is wrong with this platform: no alert fires (and every rule evaluates).
    await eventually(async () => {
      const again = (await (await fetch(`${promBase}/api/v1/rules`)).json()) as typeof rules;
      for (const r of again.data.groups.flatMap((g) => g.rules)) expect(r.health, r.name).toBe("ok");
    });
    expect(await query('ALERTS{alertstate="firing"}')).toEqual([]);
  });
});
