// Secrets at job start (issue 16): the broker's delivery time as the agent sees it (its
// "secrets delivered" log line: the POST /v1/agent/jobs/{job}/secrets round trip, one audit row per
// value committed before the answer) and the added cost to trigger -> first step output, side by
// side in the same run: triggers alternate between a job that declares no secret (the agent makes no
// call) and the same job declaring three set secrets. Real web, workers, embedded PostgreSQL
// (durable) and one process-driver agent; one job at a time, each run finished before the next.
// Part 2 (broker-inprocess.ts): the broker transaction alone, with and without secrets.
// Usage: npm run bench -- secrets   (or: tsx bench/secrets/run.ts [--rounds 3] [--jobs 10] [--broker 200])
import os from "node:os";
import path from "node:path";
import { mkdtemp, rm } from "node:fs/promises";
import type { ChildProcess } from "node:child_process";
import { addRepo, createAgentToken, createApiToken, createOrg, KekSource, setSecret, targetById } from "@kiln/engine";
import { freePort, startGitServer } from "@kiln/testkit";
import { median, percentile } from "../lib/stats.ts";
import { BenchStack } from "../control-plane/stack.ts";
import { benchBrokerInProcess, brokerLines } from "./broker-inprocess.ts";

const arg = (name: string, fallback: number) =>
  Number(process.argv[process.argv.indexOf(`--${name}`) + 1] || fallback) || fallback;
const ROUNDS = arg("rounds", 3);
const JOBS = arg("jobs", 10);
const BROKER_N = arg("broker", 200);
const progress = (m: string) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${m}\n`);

const workflow = (secrets: string) => `version: 1\njobs:\n  - name: one\n${secrets}    steps: ["echo s"]\n`;
const CONFIGS = [
  { name: "without secrets", path: ".kiln/plain.yaml" },
  { name: "with 3 secrets", path: ".kiln/secrets.yaml" },
] as const;

interface LogLine {
  msg?: string;
  ts?: string;
  run_id?: string;
  broker_ms?: number;
}

async function main(): Promise<void> {
  const stack = new BenchStack();
  const gitRoot = await mkdtemp(path.join(os.tmpdir(), "kiln-bench-git-"));
  const git = await startGitServer({ rootDir: gitRoot });
  await stack.start(await freePort(), { KILN_LEASE_TTL_MS: "60000", KILN_HEARTBEAT_MS: "2000" });
  let agent: ChildProcess | null = null;
  try {
    const org = await createOrg(stack.db, "sec");
    const repo = await git.createRepo("sec.git", {
      [CONFIGS[0].path]: workflow(""),
      [CONFIGS[1].path]: workflow("    secrets: [S_ONE, S_TWO, S_THREE]\n"),
    });
    const r = await addRepo(
      stack.db,
      {
        orgSlug: "sec",
        name: "sec/app",
        cloneUrl: repo.cloneUrl,
        webhookSecret: "sec-secret",
        workflowPath: CONFIGS[0].path,
      },
      git.sourcePolicy,
    );
    const kekFile = stack.platform.env.KILN_SECRETS_KEK_FILE;
    if (!kekFile) throw new Error("the bench platform has no KEK file");
    const keks = new KekSource(kekFile);
    const target = await targetById(stack.db, org.id, null);
    for (const name of ["S_ONE", "S_TWO", "S_THREE"])
      await setSecret(stack.db, keks, { target, name, value: `bench-value-of-${name}-0123456789`, actor: "bench" });
    const api = await createApiToken(stack.db, { orgSlug: "sec", role: "member" });
    const agentToken = (await createAgentToken(stack.db, { pool: "default" })).token;
    const lines: LogLine[] = [];
    agent = stack.spawnAgent(
      agentToken,
      { KILN_SANDBOX_DRIVER: "process", KILN_AGENT_SLOTS: "1", KILN_CLAIM_WAIT_MS: "20000" },
      (l) => {
        if (!l.startsWith("{")) return;
        try {
          lines.push(JSON.parse(l) as LogLine);
        } catch {
          // not one of the agent's JSON lines
        }
      },
    );
    await until(() => lines.some((l) => l.msg === "host agent starting"), 120_000, "agent start");
    await new Promise((res) => setTimeout(res, 1000));
    const perConfig = CONFIGS.map(() => ({ rounds: [] as { p50: number; p95: number }[], all: [] as number[] }));
    const broker: number[] = [];
    let seq = 0;
    // One warm-up run per configuration: first-request compilation and connection set-up are not the subject.
    for (const c of CONFIGS) await triggerOnce(stack, api.token, r.id, repo.headSha, c.path, seq++, lines);
    for (let round = 0; round < ROUNDS; round++) {
      const samples = CONFIGS.map(() => [] as number[]);
      for (let i = 0; i < JOBS; i++) {
        // Alternate, so load drift on the shared machine falls on both sides alike.
        for (const [k, c] of CONFIGS.entries()) {
          const { ms, runId } = await triggerOnce(stack, api.token, r.id, repo.headSha, c.path, seq++, lines);
          samples[k]?.push(ms);
          if (k === 1) {
            const d = lines.find((l) => l.msg === "secrets delivered" && l.run_id === runId);
            if (typeof d?.broker_ms !== "number") throw new Error(`run ${runId}: no "secrets delivered" line`);
            broker.push(d.broker_ms);
          }
        }
      }
      for (const [k, s] of samples.entries()) {
        perConfig[k]?.rounds.push({ p50: percentile(s, 50), p95: percentile(s, 95) });
        perConfig[k]?.all.push(...s);
      }
      progress(
        `round ${round + 1}: ${CONFIGS.map((c, k) => `${c.name} p50 ${Math.round(percentile(samples[k] ?? [], 50))} ms`).join(", ")}`,
      );
    }
    const p50 = perConfig.map((c) => median(c.rounds.map((x) => x.p50)));
    const p95 = perConfig.map((c) => median(c.rounds.map((x) => x.p95)));
    const out = [
      `Secrets at job start, ${ROUNDS} rounds x ${JOBS} jobs per configuration, alternating (${os.cpus().length} cores):`,
      "",
      "| trigger -> first step output | p50 (median of rounds) | p95 (median of rounds) | p50 per round |",
      "|---|---|---|---|",
      ...CONFIGS.map(
        (c, k) =>
          `| ${c.name} | ${Math.round(p50[k] ?? 0)} ms | ${Math.round(p95[k] ?? 0)} ms | ${(perConfig[k]?.rounds ?? []).map((x) => Math.round(x.p50)).join(" / ")} |`,
      ),
      "",
      `Added by secrets, p50: ${Math.round((p50[1] ?? 0) - (p50[0] ?? 0))} ms (ratio ${((p50[1] ?? 0) / (p50[0] ?? 1)).toFixed(2)}x); p95: ${Math.round((p95[1] ?? 0) - (p95[0] ?? 0))} ms.`,
      `Broker delivery (agent's round trip, 3 values, 3 audit rows), n=${broker.length}: p50 ${percentile(broker, 50)} ms, p95 ${percentile(broker, 95)} ms, max ${Math.max(...broker)} ms.`,
    ];
    // The agent is stopped first: it would claim the in-process part's jobs.
    agent.kill("SIGTERM");
    await new Promise((res) => setTimeout(res, 2000));
    const broker2 = await benchBrokerInProcess(stack.db, keks, { id: org.id, repoId: r.id }, BROKER_N);
    out.push("", ...brokerLines(broker2));
    console.log(out.join("\n"));
  } finally {
    agent?.kill("SIGTERM");
    await new Promise((res) => setTimeout(res, 2000));
    agent?.kill("SIGKILL");
    await stack.stop();
    await git.stop();
    await rm(gitRoot, { recursive: true, force: true });
  }
}

async function triggerOnce(
  stack: BenchStack,
  token: string,
  repoId: string,
  sha: string,
  workflowPath: string,
  seq: number,
  lines: LogLine[],
): Promise<{ ms: number; runId: string }> {
  const t0 = Date.now();
  const res = await fetch(`${stack.base}/v1/repos/${repoId}/workflow-runs`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "idempotency-key": `sec-${seq}` },
    body: JSON.stringify({ workflow_path: workflowPath, commit_sha: sha }),
  });
  if (res.status !== 202) throw new Error(`trigger failed: ${res.status} ${await res.text()}`);
  const runId = ((await res.json()) as { run_id: string }).run_id;
  await until(
    () => lines.some((l) => l.msg === "first step output" && l.run_id === runId),
    120_000,
    `first output of ${runId}`,
  );
  const at = Date.parse(lines.find((l) => l.msg === "first step output" && l.run_id === runId)?.ts ?? "");
  await waitRunCompleted(stack.base, token, runId);
  return { ms: at - t0, runId };
}

async function waitRunCompleted(base: string, token: string, runId: string): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    const r = await fetch(`${base}/v1/workflow-runs/${runId}`, { headers: { authorization: `Bearer ${token}` } });
    const run = (await r.json()) as { status?: string; outcome?: string };
    if (run.status === "completed") {
      if (run.outcome !== "success") throw new Error(`run ${runId} ended ${run.outcome}`);
      return;
    }
    await new Promise((res) => setTimeout(res, 50));
  }
  throw new Error(`run ${runId} did not complete`);
}

async function until(pred: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error(`${what}: timed out`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
