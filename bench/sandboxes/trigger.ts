// Trigger -> first step start through the whole platform, per sandbox driver: a run is created with
// the API (t0 on the bench's clock just before the POST), the workers freeze it and make its job
// ready, a host agent long-polling for work claims it, prepares the sandbox and runs the step
// `echo s`; the end is the agent's "first step output" log line (its wall-clock `ts`, same machine
// clock), i.e. the first byte the user's command wrote. One agent process per configuration, one
// job at a time, the run finished before the next trigger.
//   process          KILN_SANDBOX_DRIVER=process
//   microvm warm     KILN_SANDBOX_DRIVER=microvm, pool of 1, each trigger waits until the pool holds
//                    a restored VM (every sample a pool hit; the refill is off the clock)
//   microvm cold     KILN_SANDBOX_DRIVER=microvm, pool of 0: every job boots a VM, which is the
//                    path a pool miss takes (bootCold) without racing a background refill
import type { ChildProcess } from "node:child_process";
import os from "node:os";
import path from "node:path";
import { addMember, addRepo, createAgentToken, createApiToken, createOrg } from "@kiln/engine";
import { freePort, startGitServer } from "@kiln/testkit";
import { mkdtemp, rm } from "node:fs/promises";
import { median, percentile } from "../lib/stats.ts";
import { BenchStack } from "../control-plane/stack.ts";

export interface TriggerOptions {
  rounds: number;
  perRound: number;
  assetsDir: string;
  progress: (m: string) => void;
  /** Only the process driver's configuration (no QEMU on the host, or measuring that driver alone). */
  processOnly?: boolean;
}

export interface TriggerRow {
  name: string;
  /** p50 and p95 of each round. */
  rounds: Array<{ p50: number; p95: number; n: number }>;
  poolHits: number;
  poolMisses: number;
}

interface LogLine {
  msg?: string;
  ts?: string;
  run_id?: string;
  pool_hit?: boolean;
}

export async function benchTriggerToFirstStep(opts: TriggerOptions): Promise<TriggerRow[]> {
  const stack = new BenchStack();
  const gitRoot = await mkdtemp(path.join(os.tmpdir(), "kiln-bench-git-"));
  const git = await startGitServer({ rootDir: gitRoot });
  await stack.start(await freePort(), { KILN_LEASE_TTL_MS: "60000", KILN_HEARTBEAT_MS: "2000" });
  const rows: TriggerRow[] = [];
  try {
    await createOrg(stack.db, "sb");
    await addMember(stack.db, { orgSlug: "sb", login: "dev", role: "member" });
    const repo = await git.createRepo("sb.git", {
      ".kiln/workflow.yaml": 'version: 1\njobs:\n  - name: one\n    steps: ["echo s"]\n',
    });
    const r = await addRepo(
      stack.db,
      {
        orgSlug: "sb",
        name: "sb/app",
        cloneUrl: repo.cloneUrl,
        webhookSecret: "sb-secret",
        workflowPath: ".kiln/workflow.yaml",
      },
      git.sourcePolicy,
    );
    const api = await createApiToken(stack.db, { orgSlug: "sb", role: "member" });
    const agentToken = (await createAgentToken(stack.db, { pool: "default" })).token;
    const configs: Array<{ name: string; env: Record<string, string>; warm: boolean }> = [
      { name: "process", env: { KILN_SANDBOX_DRIVER: "process" }, warm: false },
      {
        name: "microvm warm (pool hit)",
        env: { KILN_SANDBOX_DRIVER: "microvm", KILN_WARM_POOL_SIZE: "1" },
        warm: true,
      },
      {
        name: "microvm cold (miss: boot)",
        env: { KILN_SANDBOX_DRIVER: "microvm", KILN_WARM_POOL_SIZE: "0" },
        warm: false,
      },
    ];
    let seq = 0;
    for (const config of opts.processOnly ? configs.slice(0, 1) : configs) {
      const lines: LogLine[] = [];
      const agent = stack.spawnAgent(
        agentToken,
        {
          KILN_AGENT_SLOTS: "1",
          KILN_CLAIM_WAIT_MS: "20000",
          KILN_MICROVM_ACCEL: "tcg",
          KILN_MICROVM_ASSETS: opts.assetsDir,
          ...config.env,
        },
        (l) => {
          if (!l.startsWith("{")) return;
          try {
            lines.push(JSON.parse(l) as LogLine);
          } catch {
            // a partial line cannot happen (split on newlines); anything else is not ours
          }
        },
      );
      try {
        // Logged once the driver exists (for microvm: assets, accel and the pool's snapshot ready).
        await until(() => lines.some((l) => l.msg === "host agent starting"), 240_000, "agent start", agent);
        // Let the claim loop's first long-poll be in flight, as it is on a host that waits for work.
        await new Promise((res) => setTimeout(res, 1000));
        const row: TriggerRow = { name: config.name, rounds: [], poolHits: 0, poolMisses: 0 };
        for (let round = 0; round < opts.rounds; round++) {
          const samples: number[] = [];
          for (let i = 0; i < opts.perRound; i++) {
            if (config.warm) {
              // Pool of one: ready once more restores finished than sandboxes were handed out.
              const taken = lines.filter((l) => l.msg === "microvm sandbox created").length;
              await until(
                () => lines.filter((l) => l.msg === "warm pool: sandbox ready").length > taken,
                240_000,
                "a warm VM",
                agent,
              );
            }
            const t0 = Date.now();
            const res = await fetch(`${stack.base}/v1/repos/${r.id}/workflow-runs`, {
              method: "POST",
              headers: {
                authorization: `Bearer ${api.token}`,
                "content-type": "application/json",
                "idempotency-key": `sb-${seq++}`,
              },
              body: JSON.stringify({ workflow_path: ".kiln/workflow.yaml", commit_sha: repo.headSha }),
            });
            if (res.status !== 202) throw new Error(`trigger failed: ${res.status} ${await res.text()}`);
            const runId = ((await res.json()) as { run_id: string }).run_id;
            await until(
              () => lines.some((l) => l.msg === "first step output" && l.run_id === runId),
              240_000,
              `first output of ${runId}`,
              agent,
            );
            const at = Date.parse(lines.find((l) => l.msg === "first step output" && l.run_id === runId)!.ts!);
            samples.push(at - t0);
            await waitRunCompleted(stack.base, api.token, runId);
          }
          row.rounds.push({ p50: percentile(samples, 50), p95: percentile(samples, 95), n: samples.length });
          opts.progress(`${config.name} round ${round + 1}: ${samples.map((x) => Math.round(x)).join(" ")}`);
        }
        const created = lines.filter((l) => l.msg === "microvm sandbox created");
        row.poolHits = created.filter((l) => l.pool_hit === true).length;
        row.poolMisses = created.filter((l) => l.pool_hit === false).length;
        rows.push(row);
      } finally {
        agent.kill("SIGTERM");
        await new Promise((r) => setTimeout(r, 3000));
        agent.kill("SIGKILL");
      }
    }
  } finally {
    await stack.stop();
    await git.stop();
    await rm(gitRoot, { recursive: true, force: true });
  }
  return rows;
}

async function waitRunCompleted(base: string, token: string, runId: string): Promise<void> {
  const deadline = Date.now() + 240_000;
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

async function until(pred: () => boolean, timeoutMs: number, what: string, agent: ChildProcess): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!pred()) {
    if (agent.exitCode !== null) throw new Error(`agent exited (${agent.exitCode}) while waiting for ${what}`);
    if (Date.now() > deadline) throw new Error(`${what}: timed out`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Markdown table: median over rounds of each round's p50 and p95, and the ratio to the first row. */
export function triggerTable(rows: TriggerRow[]): string {
  const base = rows[0] ? median(rows[0].rounds.map((x) => x.p50)) : Number.NaN;
  const out = [
    "| driver | rounds x jobs | p50 (median of rounds) | p95 (median of rounds) | p50 per round | p50 ratio to process | pool hits / misses |",
    "|---|---|---|---|---|---|---|",
  ];
  for (const r of rows) {
    const p50 = median(r.rounds.map((x) => x.p50));
    const p95 = median(r.rounds.map((x) => x.p95));
    const per = r.rounds.map((x) => Math.round(x.p50)).join(" / ");
    out.push(
      `| ${r.name} | ${r.rounds.length} x ${r.rounds[0]?.n ?? 0} | ${p50.toFixed(0)} ms | ${p95.toFixed(0)} ms | ${per} ms | ${(p50 / base).toFixed(1)}x | ${r.name.startsWith("microvm") ? `${r.poolHits} / ${r.poolMisses}` : "n/a"} |`,
    );
  }
  return out.join("\n");
}
