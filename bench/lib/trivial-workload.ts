// The trivial one-step workload the overhead benches share (issue 32): one org, one repo whose
// workflow is one step that prints its own clock, an API token, N host agents on the process driver,
// and the calls to trigger runs through /v1 and wait for their outcomes in PostgreSQL.
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { addRepo, createAgentToken, createApiToken, createOrg } from "@kiln/engine";
import { startGitServer, type TestGitServer } from "@kiln/testkit";
import type { BenchStack } from "../control-plane/stack.ts";

export interface TrivialWorkload {
  git: TestGitServer;
  /** POST /v1/repos/{id}/workflow-runs; resolves to the run id. */
  trigger(): Promise<string>;
  /** Until every run is completed; throws when one did not succeed. */
  waitDone(ids: string[]): Promise<void>;
  /** The step's own `date +%s.%N` stamp (ms since the epoch), read from the run's log. */
  stampOf(runId: string): Promise<number>;
  stop(): Promise<void>;
}

export async function startTrivialWorkload(
  stack: BenchStack,
  opts: { agents: number; agentEnv?: Record<string, string> },
): Promise<TrivialWorkload> {
  const git = await startGitServer({ rootDir: await mkdtemp(path.join(os.tmpdir(), "kiln-bench-git-")) });
  await createOrg(stack.db, "bench");
  // The same step as Buildbot's in bench/vs-buildbot: its own clock, then a line of output.
  const repo = await git.createRepo("bench.git", {
    ".kiln/workflow.yaml": 'version: 1\njobs:\n  - name: hello\n    steps: ["date +%s.%N; echo hello"]\n',
  });
  const r = await addRepo(
    stack.db,
    {
      orgSlug: "bench",
      name: "bench/app",
      cloneUrl: repo.cloneUrl,
      webhookSecret: "bench-secret",
      workflowPath: ".kiln/workflow.yaml",
    },
    git.sourcePolicy,
  );
  const api = await createApiToken(stack.db, { orgSlug: "bench", role: "member" });
  const agentTok = await createAgentToken(stack.db, { pool: "default" });
  for (let i = 0; i < opts.agents; i++)
    stack.spawnAgent(agentTok.token, { KILN_AGENT_SLOTS: "1", KILN_CLAIM_WAIT_MS: "20000", ...opts.agentEnv });
  await new Promise((res) => setTimeout(res, 3000));

  const trigger = async (): Promise<string> => {
    const res = await fetch(`${stack.base}/v1/repos/${r.id}/workflow-runs`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${api.token}`,
        "content-type": "application/json",
        "idempotency-key": crypto.randomUUID(),
      },
      body: JSON.stringify({ workflow_path: ".kiln/workflow.yaml", commit_sha: repo.headSha }),
    });
    if (res.status !== 202) throw new Error(`trigger answered ${res.status}: ${await res.text()}`);
    return ((await res.json()) as { run_id: string }).run_id;
  };
  const waitDone = async (ids: string[]): Promise<void> => {
    for (;;) {
      const rows = await stack.db.$queryRaw<{ n: bigint; bad: bigint }[]>`
        SELECT count(*) FILTER (WHERE status <> 'completed') AS n,
               count(*) FILTER (WHERE status = 'completed' AND outcome <> 'success') AS bad
        FROM workflow_run WHERE id = ANY(${ids}::uuid[])`;
      if (Number(rows[0]?.bad) > 0) throw new Error(`Kiln: ${rows[0]?.bad} runs did not succeed`);
      if (rows[0]?.n === 0n) return;
      await new Promise((res) => setTimeout(res, 10));
    }
  };
  // Through the API, not log_chunk: with an object store the archiver moves a finished log out of
  // PostgreSQL soon after completion.
  const stampOf = async (runId: string): Promise<number> => {
    const jobs = await stack.db.$queryRaw<{ id: string }[]>`SELECT id::text FROM job_run WHERE run_id = ${runId}::uuid`;
    const res = await fetch(`${stack.base}/v1/jobs/${jobs[0]?.id}/logs/raw`, {
      headers: { authorization: `Bearer ${api.token}` },
    });
    const m = /(\d{10}\.\d{3,9})/.exec(await res.text());
    if (!m?.[1]) throw new Error(`Kiln: no date stamp in run ${runId}'s log (logs/raw answered ${res.status})`);
    return Number(m[1]) * 1000;
  };
  return { git, trigger, waitDone, stampOf, stop: () => git.stop() };
}
