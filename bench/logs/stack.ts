// The log benchmarks' stack: bench/control-plane's BenchStack (durable embedded PostgreSQL with
// default fsync settings, `next start`, workers) with a private redis-server, the S3 store in its
// own process and a git server, and one tenant with an API token and a host credential.
import { freePort, type TestGitServer } from "@kiln/testkit";
import { addRepo, createAgentToken, createApiToken, createOrg } from "@kiln/engine";
import { BenchStack } from "../control-plane/stack.ts";

export const progress = (m: string) =>
  process.stderr.write(`[bench logs ${new Date().toISOString().slice(11, 19)}] ${m}\n`);

export class LogBenchStack {
  // The store in its own process, as in bench/artifacts: it must not share the load generator's event loop.
  readonly stack = new BenchStack({ redis: true, s3: "own-process", git: true });
  apiToken = "";
  agentToken = "";
  repoId = "";
  orgId = "";
  private repo: Awaited<ReturnType<TestGitServer["createRepo"]>> | null = null;

  async start(env: Record<string, string> = {}): Promise<void> {
    await this.stack.start(await freePort(), env);
    const git = this.stack.platform.git;
    if (!git) throw new Error("the bench stack started no git server");
    const org = await createOrg(this.stack.db, "bench");
    this.orgId = org.id;
    this.repo = await git.createRepo("bench.git", {
      ".kiln/workflow.yaml": 'version: 1\njobs:\n  - name: noop\n    steps: ["true"]\n',
    });
    const r = await addRepo(
      this.stack.db,
      {
        orgSlug: "bench",
        name: "bench/app",
        cloneUrl: this.repo.cloneUrl,
        webhookSecret: "bench-secret",
        workflowPath: ".kiln/workflow.yaml",
      },
      git.sourcePolicy,
    );
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
  }
}
