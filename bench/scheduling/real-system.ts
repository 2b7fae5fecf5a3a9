// Issue #9's proof on the real system: one host agent (process driver, KILN_AGENT_SLOTS=40), org A
// submits 900 one-second jobs, org B submits 5 one second later. Run once with the fair
// dispatcher and once with plain FIFO (KILN_DISPATCH_POLICY), same machine, same run.
// Usage: tsx bench/scheduling/real-system.ts [--jobs 900] [--slots 40]
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { addRepo, createAgentToken, createApiToken, createOrg } from "@kiln/engine";
import { freePort, startGitServer } from "@kiln/testkit";
import { percentile } from "../lib/stats.ts";
import { BenchStack } from "../control-plane/stack.ts";

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const JOBS = arg("jobs", 900);
const SLOTS = arg("slots", 40);
const log = (m: string) => process.stderr.write(`[sched ${new Date().toISOString().slice(11, 19)}] ${m}\n`);

function workflow(n: number): string {
  return `version: 1\njobs:\n${Array.from({ length: n }, (_, i) => `  - {name: j${i}, needs: [], steps: ["sleep 1"]}\n`).join("")}`;
}

async function scenario(policy: "fair" | "fifo") {
  const stack = new BenchStack();
  const gitRoot = await mkdtemp(path.join(os.tmpdir(), "kiln-sched-git-"));
  const git = await startGitServer({ rootDir: gitRoot });
  await stack.start(await freePort(), {
    KILN_DISPATCH_POLICY: policy,
    KILN_LOCAL_REPOS_ROOT: gitRoot, // the file:// repo below
    KILN_LEASE_TTL_MS: "30000",
    KILN_HEARTBEAT_MS: "5000",
  });
  try {
    const per = 225;
    const files: Record<string, string> = { ".kiln/a.yaml": workflow(per), ".kiln/b.yaml": workflow(5) };
    await git.createRepo("sched.git", files);
    // file:// keeps 900 checkouts off the CGI git server: the measurement is dispatch, not git.
    const cloneUrl = `file://${gitRoot}/sched.git`;
    const tenants = [] as { token: string; repoId: string }[];
    for (const org of ["whale", "small"]) {
      await createOrg(stack.db, org);
      const r = await addRepo(
        stack.db,
        {
          orgSlug: org,
          name: `${org}/app`,
          cloneUrl,
          webhookSecret: "secret-secret",
          workflowPath: ".kiln/a.yaml",
        },
        git.sourcePolicy,
      );
      tenants.push({ token: (await createApiToken(stack.db, { orgSlug: org, role: "member" })).token, repoId: r.id });
    }
    const sha = (await import("node:child_process"))
      .execFileSync("git", ["--git-dir", `${gitRoot}/sched.git`, "rev-parse", "HEAD"])
      .toString()
      .trim();
    const agent = await createAgentToken(stack.db, { pool: "default" });
    stack.spawnAgent(agent.token, { KILN_AGENT_SLOTS: String(SLOTS), KILN_CLAIM_WAIT_MS: "20000" });
    await new Promise((r) => setTimeout(r, 3000));
    const trigger = async (t: { token: string; repoId: string }, file: string) => {
      const res = await fetch(`${stack.base}/v1/repos/${t.repoId}/workflow-runs`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${t.token}`,
          "content-type": "application/json",
          "idempotency-key": randomUUID(),
        },
        body: JSON.stringify({ workflow_path: file, commit_sha: sha }),
      });
      return ((await res.json()) as { run_id: string }).run_id;
    };
    const whaleRuns: string[] = [];
    for (let i = 0; i < Math.ceil(JOBS / per); i++) whaleRuns.push(await trigger(tenants[0]!, ".kiln/a.yaml"));
    await new Promise((r) => setTimeout(r, 1000));
    const smallRun = await trigger(tenants[1]!, ".kiln/b.yaml");
    log(`${policy}: triggered ${whaleRuns.length} whale runs and the small run`);
    const all = [...whaleRuns, smallRun];
    const deadline = Date.now() + 15 * 60_000;
    for (;;) {
      const rows = await stack.db.$queryRaw<
        { n: bigint }[]
      >`SELECT count(*) AS n FROM workflow_run WHERE id = ANY(${all}::uuid[]) AND status <> 'completed'`;
      const small = await stack.db.$queryRaw<
        { n: bigint }[]
      >`SELECT count(*) AS n FROM workflow_run WHERE id = ${smallRun}::uuid AND status = 'completed'`;
      if (rows[0]?.n === 0n || (small[0]?.n === 1n && Date.now() > deadline)) break;
      if (Date.now() > deadline) throw new Error("scenario did not finish");
      await new Promise((r) => setTimeout(r, 500));
    }
    const starts = await stack.db.$queryRaw<
      { org: string; wait_ms: number; run_created: Date; claimed_at: Date; finished_at: Date | null }[]
    >`
      SELECT o.slug AS org, (EXTRACT(EPOCH FROM (a.claimed_at - r.created_at)) * 1000)::float8 AS wait_ms, r.created_at AS run_created, a.claimed_at, a.finished_at
      FROM attempt a JOIN workflow_run r ON r.id = a.run_id JOIN org o ON o.id = r.org_id WHERE r.id = ANY(${all}::uuid[]) AND a.epoch = 1`;
    const small = starts.filter((s) => s.org === "small").map((s) => s.wait_ms);
    const whale = starts.filter((s) => s.org === "whale");
    const whaleEnd = Math.max(...whale.map((w) => (w.finished_at ?? w.claimed_at).getTime()));
    const firstWhale = Math.min(...whale.map((w) => w.run_created.getTime()));
    const outcomes = await stack.db.$queryRaw<
      { outcome: string; n: bigint }[]
    >`SELECT outcome, count(*) AS n FROM workflow_run WHERE id = ANY(${all}::uuid[]) GROUP BY outcome`;
    return {
      policy,
      smallJobs: small.length,
      smallWaitMaxMs: Math.max(...small),
      smallWaitP50Ms: percentile(small, 50),
      whaleJobs: whale.length,
      whaleMakespanS: (whaleEnd - firstWhale) / 1000,
      outcomes: Object.fromEntries(outcomes.map((o) => [o.outcome, Number(o.n)])),
    };
  } finally {
    await stack.stop();
    await git.stop();
    await rm(gitRoot, { recursive: true, force: true });
  }
}

const fair = await scenario("fair");
log(JSON.stringify(fair));
const fifo = await scenario("fifo");
log(JSON.stringify(fifo));
console.log(`| policy | small org: 5 jobs, start wait p50 / max | whale: ${JOBS} jobs, makespan | run outcomes |
|---|---|---|---|
| fair | ${(fair.smallWaitP50Ms / 1000).toFixed(2)} s / ${(fair.smallWaitMaxMs / 1000).toFixed(2)} s | ${fair.whaleMakespanS.toFixed(1)} s | ${JSON.stringify(fair.outcomes)} |
| fifo | ${(fifo.smallWaitP50Ms / 1000).toFixed(2)} s / ${(fifo.smallWaitMaxMs / 1000).toFixed(2)} s | ${fifo.whaleMakespanS.toFixed(1)} s | ${JSON.stringify(fifo.outcomes)} |`);
process.stdout.write("", () => process.exit(0));
