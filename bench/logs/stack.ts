// The log benchmarks' stack: bench/control-plane's BenchStack (durable embedded PostgreSQL with
// default fsync settings, `next start`, workers) plus a private redis-server, s3rver in its own
// process and a git server, and one tenant with an API token and a host credential.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { addRepo, createAgentToken, createApiToken, createOrg } from "@kiln/engine";
import { freePort, startGitServer, startRedis, type RedisHandle, type TestGitServer } from "@kiln/testkit";
import { BenchStack } from "../control-plane/stack.ts";

export const progress = (m: string) =>
  process.stderr.write(`[bench logs ${new Date().toISOString().slice(11, 19)}] ${m}\n`);

export class LogBenchStack {
  readonly stack = new BenchStack();
  apiToken = "";
  agentToken = "";
  repoId = "";
  orgId = "";
  private redis: RedisHandle | null = null;
  private s3: ChildProcess | null = null;
  private git: TestGitServer | null = null;
  private tmp = "";
  private repo: Awaited<ReturnType<TestGitServer["createRepo"]>> | null = null;

  async start(env: Record<string, string> = {}): Promise<void> {
    this.tmp = await mkdtemp(path.join(os.tmpdir(), "kiln-bench-logs-"));
    this.redis = await startRedis({ dataDir: path.join(this.tmp, "redis") });
    const s3Endpoint = await this.startS3(path.join(this.tmp, "s3"));
    this.git = await startGitServer({ rootDir: path.join(this.tmp, "git") });
    await this.stack.start(await freePort(), {
      REDIS_URL: this.redis.url,
      S3_ENDPOINT: s3Endpoint,
      KILN_S3_BUCKET: "kiln",
      ...env,
    });
    const org = await createOrg(this.stack.db, "bench");
    this.orgId = org.id;
    this.repo = await this.git.createRepo("bench.git", {
      ".kiln/workflow.yaml": 'version: 1\njobs:\n  - name: noop\n    steps: ["true"]\n',
    });
    const r = await addRepo(this.stack.db, {
      orgSlug: "bench",
      name: "bench/app",
      cloneUrl: this.repo.cloneUrl,
      webhookSecret: "bench-secret",
      workflowPath: ".kiln/workflow.yaml",
    });
    this.repoId = r.id;
    this.apiToken = (await createApiToken(this.stack.db, { orgSlug: "bench", role: "member" })).token;
    this.agentToken = (await createAgentToken(this.stack.db, { pool: "default" })).token;
  }

  /** Commits `workflow` and starts a run of it; resolves with the run's first job id. */
  async runWorkflow(workflow: string): Promise<{ runId: string; jobId: string }> {
    if (!this.repo) throw new Error("not started");
    const sha = await this.repo.commit({ ".kiln/workflow.yaml": workflow });
    const res = await fetch(`${this.stack.base}/v1/repos/${this.repoId}/workflow-runs`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${this.apiToken}`,
        "content-type": "application/json",
        "idempotency-key": `${Date.now()}-${Math.random()}`,
      },
      body: JSON.stringify({ workflow_path: ".kiln/workflow.yaml", commit_sha: sha }),
    });
    const { run_id: runId } = (await res.json()) as { run_id: string };
    for (;;) {
      const rows = await this.stack.db.$queryRaw<
        { id: string }[]
      >`SELECT id FROM job_run WHERE run_id = ${runId}::uuid ORDER BY job_index LIMIT 1`;
      if (rows[0]) return { runId, jobId: rows[0].id };
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async waitForRun(runId: string): Promise<string> {
    for (;;) {
      const rows = await this.stack.db.$queryRaw<
        { status: string; outcome: string | null }[]
      >`SELECT status, outcome FROM workflow_run WHERE id = ${runId}::uuid`;
      if (rows[0]?.status === "completed") return rows[0].outcome ?? "";
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async stop(): Promise<void> {
    await this.stack.stop();
    this.s3?.kill("SIGTERM");
    await this.redis?.stop();
    await this.git?.stop();
    await rm(this.tmp, { recursive: true, force: true });
  }

  // s3rver in its own process, as in bench/artifacts: the store must not share the load generator's event loop.
  private async startS3(dataDir: string): Promise<string> {
    const child = spawn(
      process.execPath,
      ["--import", "tsx", path.join(import.meta.dirname, "../artifacts/s3-process.ts"), dataDir],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    this.s3 = child;
    return new Promise((resolve, reject) => {
      let out = "";
      child.stdout?.on("data", (d: Buffer) => {
        out += d.toString();
        const line = out.split("\n")[0];
        if (out.includes("\n") && line) resolve((JSON.parse(line) as { endpoint: string }).endpoint);
      });
      child.once("exit", (code) => reject(new Error(`s3rver exited ${code}`)));
    });
  }
}
