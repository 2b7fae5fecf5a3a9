import { randomUUID } from "node:crypto";
import { addRepo, createAgentToken, createApiToken, createOrg } from "@kiln/engine";
import { freePort, startGitServer } from "@kiln/testkit";
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { BenchStack } from "./stack.ts";
const stack = new BenchStack();
const git = await startGitServer({ rootDir: await mkdtemp(path.join(os.tmpdir(), "kiln-ph-git-")) });
await stack.start(await freePort(), {});
await createOrg(stack.db, "bench");
const repo = await git.createRepo("bench.git", { ".kiln/workflow.yaml": "version: 1\njobs:\n  - name: one\n    steps: [\"true\"]\n" });
const r = await addRepo(stack.db, { orgSlug: "bench", name: "bench/app", cloneUrl: repo.cloneUrl, webhookSecret: "bench-secret", workflowPath: ".kiln/workflow.yaml" });
const api = await createApiToken(stack.db, { orgSlug: "bench", role: "member" });
const tok = await createAgentToken(stack.db, { pool: "default" });
import { spawn } from "node:child_process";
import { openSync } from "node:fs";
const out = openSync("/tmp/agent-phases.log", "w");
spawn(process.execPath, ["--import", "tsx", "apps/host-agent/src/index.ts"], { cwd: "/work/main", env: { ...process.env, KILN_CONTROL_URL: stack.base, KILN_AGENT_TOKEN: tok.token, KILN_WORK_DIR: "/tmp/agent-phases-work", KILN_AGENT_SLOTS: "4", KILN_CLAIM_WAIT_MS: "20000" }, stdio: ["ignore", out, out] });
await new Promise((res) => setTimeout(res, 3000));
const ids: string[] = [];
for (let i = 0; i < 12; i++) {
  const t0 = performance.now();
  const res = await fetch(`${stack.base}/v1/repos/${r.id}/workflow-runs`, { method: "POST", headers: { authorization: `Bearer ${api.token}`, "content-type": "application/json", "idempotency-key": randomUUID() }, body: JSON.stringify({ workflow_path: ".kiln/workflow.yaml", commit_sha: repo.headSha }) });
  const id = ((await res.json()) as { run_id: string }).run_id;
  ids.push(id);
  for (;;) {
    const rows = await stack.db.$queryRaw<{ status: string }[]>`SELECT status FROM workflow_run WHERE id = ${id}::uuid`;
    if (rows[0]?.status === "completed") break;
    await new Promise((res) => setTimeout(res, 5));
  }
  console.log("run wall ms", (performance.now() - t0).toFixed(0));
}
const rows = await stack.db.$queryRaw<Record<string, unknown>[]>`
  SELECT r.outcome,
    (EXTRACT(EPOCH FROM (j.ready_at - r.created_at))*1000)::int AS to_ready,
    (EXTRACT(EPOCH FROM (a.claimed_at - j.ready_at))*1000)::int AS to_claim,
    a.image_ms, a.dispatch_ms, a.execution_ms, a.finalize_ms,
    (EXTRACT(EPOCH FROM (a.finished_at - a.claimed_at))*1000)::int AS claim_to_finish,
    (EXTRACT(EPOCH FROM (r.finished_at - a.finished_at))*1000)::int AS to_run_done,
    (EXTRACT(EPOCH FROM (r.finished_at - r.created_at))*1000)::int AS total
  FROM workflow_run r JOIN job_run j ON j.run_id = r.id JOIN attempt a ON a.job_id = j.id WHERE r.id = ANY(${ids}::uuid[]) ORDER BY r.created_at`;
console.table(rows);
await stack.stop(); await git.stop();
process.exit(0);
