import { sign } from "@octokit/webhooks-methods";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Platform } from "./support/platform.ts";
import { forgeIdOf } from "./support/seed-tenant.ts";

// Black box: signed webhook -> frozen run -> host agent claims, runs steps, completes -> successor
// -> finished run, through the production web server, the workers and a host agent process.
const p = new Platform();
let tenant: Awaited<ReturnType<Platform["seedTenant"]>>;

const WORKFLOW = `version: 1
jobs:
  - name: compile
    steps:
      - echo "compiling at $(git rev-parse --short HEAD)"
      - test "$CI" = true
  - name: test
    steps:
      - test -f README.md
`;

function pushBody(repoName: string, sha: string, sender = "dev") {
  return JSON.stringify({
    ref: "refs/heads/main",
    before: "0".repeat(40),
    after: sha,
    created: false,
    deleted: false,
    forced: false,
    repository: { full_name: repoName, name: repoName.split("/")[1] },
    sender: { login: sender, id: forgeIdOf(sender) },
    commits: [],
    head_commit: null,
  });
}

async function webhook(body: string, secret: string, delivery: string, event = "push") {
  const r = await fetch(`${p.base}/v1/webhooks/github`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-github-event": event,
      "x-github-delivery": delivery,
      "x-hub-signature-256": await sign(secret, body),
    },
    body,
  });
  return { status: r.status, json: (await r.json()) as { run_id: string | null; duplicate?: boolean } };
}

beforeAll(async () => {
  await p.start();
  tenant = await p.seedTenant("acme", { ".kiln/workflow.yaml": WORKFLOW, "README.md": "acme\n" }, { member: "dev" });
  await p.startAgent("agent-1", tenant.agentToken);
}, 180_000);
afterAll(async () => {
  await p.stop();
});

describe("from a signed push to a finished run", () => {
  it("runs both jobs in order on a host agent and reports success with attempts and phases", async () => {
    const body = pushBody(tenant.repoName, tenant.git.headSha);
    const first = await webhook(body, tenant.secret, "delivery-1");
    expect(first.status).toBe(202);
    const again = await webhook(body, tenant.secret, "delivery-1");
    expect(again).toEqual({ status: 200, json: { run_id: first.json.run_id, duplicate: true } });

    const run = await p.waitForRun(first.json.run_id!, tenant.token, (r) => r.status === "completed");
    expect(run).toMatchObject({
      outcome: "success",
      trust_class: "trusted",
      trigger: "push",
      commit_sha: tenant.git.headSha,
    });
    expect(run.workflow_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(run.jobs.map((j: any) => [j.name, j.outcome, j.attempts.length])).toEqual([
      ["compile", "success", 1],
      ["test", "success", 1],
    ]);
    const attempt = run.jobs[0].attempts[0];
    expect(attempt).toMatchObject({ epoch: 1, outcome: "success" });
    expect(attempt.host).toBeTruthy();
    expect(Date.parse(attempt.started_at)).toBeLessThanOrEqual(Date.parse(attempt.finished_at));
    expect(attempt.phases.queued_ms).toBeGreaterThanOrEqual(0);
    expect(attempt.phases.execution_ms).toBeGreaterThanOrEqual(0);
    // The successor started only after its predecessor finished.
    expect(Date.parse(run.jobs[1].attempts[0].started_at)).toBeGreaterThanOrEqual(
      Date.parse(run.jobs[0].attempts[0].finished_at),
    );
  });

  it("a failing step is the user's failure, named with its cause; the successor never runs", async () => {
    const sha = await tenant.git.commit({
      ".kiln/workflow.yaml":
        'version: 1\njobs:\n  - name: a\n    steps: ["exit 3"]\n  - name: b\n    steps: ["true"]\n',
    });
    const r = await p.api(
      "POST",
      `/v1/repos/${tenant.repoId}/workflow-runs`,
      tenant.token,
      { workflow_path: ".kiln/workflow.yaml", commit_sha: sha, inputs: {} },
      { "idempotency-key": "fail-1" },
    );
    expect(r.status).toBe(202);
    const run = await p.waitForRun(r.json.run_id, tenant.token, (x) => x.status === "completed");
    expect(run).toMatchObject({ outcome: "user_failure", cause: "step.failed" });
    expect(run.jobs[0]).toMatchObject({ outcome: "user_failure", cause: "step.failed" });
    expect(run.jobs[0].attempts[0].exit_code).toBe(3);
    expect(run.jobs[1]).toMatchObject({ outcome: "cancelled", cause: "needs.not_satisfied" });
    expect(run.jobs[1].attempts).toHaveLength(0);

    const retry = await p.api("POST", `/v1/workflow-runs/${run.id}/retry`, tenant.token);
    expect(retry.status).toBe(202);
    const child = await p.waitForRun(retry.json.run_id, tenant.token, (x) => x.status === "completed");
    expect(child).toMatchObject({ parent_run_id: run.id, outcome: "user_failure", workflow_hash: run.workflow_hash });
  });

  it("cancels a running job: the agent stops the step and the run ends cancelled", async () => {
    const sha = await tenant.git.commit({
      ".kiln/workflow.yaml": 'version: 1\njobs:\n  - name: slow\n    steps: ["sleep 30"]\n',
    });
    const r = await p.api(
      "POST",
      `/v1/repos/${tenant.repoId}/workflow-runs`,
      tenant.token,
      { workflow_path: ".kiln/workflow.yaml", commit_sha: sha },
      { "idempotency-key": "slow-1" },
    );
    await p.waitForRun(r.json.run_id, tenant.token, (x) => x.jobs[0]?.status === "running");
    const c = await p.api("POST", `/v1/workflow-runs/${r.json.run_id}/cancel`, tenant.token);
    expect(c.status).toBe(202);
    const run = await p.waitForRun(r.json.run_id, tenant.token, (x) => x.status === "completed", 30_000);
    expect(run).toMatchObject({ outcome: "cancelled" });
    expect(run.jobs[0].attempts[0]).toMatchObject({ outcome: "cancelled" });
    const again = await p.api("POST", `/v1/workflow-runs/${r.json.run_id}/cancel`, tenant.token);
    expect(again).toMatchObject({ status: 409, json: { error: { code: "RUN.ALREADY_FINISHED" } } });
  });
});

describe("API contract", () => {
  it("errors are JSON {error: {code, message}} with the right status, and tenants are isolated", async () => {
    const other = await p.seedTenant("globex", { ".kiln/workflow.yaml": WORKFLOW }, {});
    const mine = await p.api(
      "POST",
      `/v1/repos/${tenant.repoId}/workflow-runs`,
      tenant.token,
      { workflow_path: ".kiln/workflow.yaml", commit_sha: tenant.git.headSha },
      { "idempotency-key": "iso-1" },
    );
    expect(mine.status).toBe(202);
    expect(await p.api("GET", `/v1/workflow-runs/${mine.json.run_id}`, other.token)).toMatchObject({
      status: 404,
      json: { error: { code: "RUN.NOT_FOUND" } },
    });
    expect((await p.api("POST", `/v1/workflow-runs/${mine.json.run_id}/cancel`, other.token)).status).toBe(404);
    expect(
      (
        await p.api(
          "POST",
          `/v1/repos/${tenant.repoId}/workflow-runs`,
          other.token,
          { workflow_path: "a.yaml", commit_sha: "a".repeat(40) },
          { "idempotency-key": "x" },
        )
      ).status,
    ).toBe(404);
    expect((await p.api("GET", `/v1/workflow-runs/${mine.json.run_id}`, null)).status).toBe(401);
    expect(await p.api("GET", `/v1/workflow-runs/not-a-uuid`, tenant.token)).toMatchObject({
      status: 404,
      json: { error: { code: "RUN.NOT_FOUND" } },
    });
    const badJson = await p.api("POST", `/v1/repos/${tenant.repoId}/workflow-runs`, tenant.token, "{nope", {
      "idempotency-key": "bad",
    });
    expect(badJson).toMatchObject({ status: 400, json: { error: { code: "REQUEST.INVALID" } } });
    const badSha = await p.api(
      "POST",
      `/v1/repos/${tenant.repoId}/workflow-runs`,
      tenant.token,
      { workflow_path: ".kiln/workflow.yaml", commit_sha: "main" },
      { "idempotency-key": "bad2" },
    );
    expect(badSha.status).toBe(400);
    expect(badSha.json.error.message).toMatch(/commit_sha/);
    const reuse = await p.api(
      "POST",
      `/v1/repos/${tenant.repoId}/workflow-runs`,
      tenant.token,
      { workflow_path: ".kiln/other.yaml", commit_sha: tenant.git.headSha },
      { "idempotency-key": "iso-1" },
    );
    expect(reuse).toMatchObject({ status: 422, json: { error: { code: "IDEMPOTENCY.KEY_REUSED" } } });
    const replay = await p.api(
      "POST",
      `/v1/repos/${tenant.repoId}/workflow-runs`,
      tenant.token,
      { workflow_path: ".kiln/workflow.yaml", commit_sha: tenant.git.headSha },
      { "idempotency-key": "iso-1" },
    );
    expect(replay).toMatchObject({ status: 202, json: { run_id: mine.json.run_id } });
    const noKey = await p.api("POST", `/v1/repos/${tenant.repoId}/workflow-runs`, tenant.token, {
      workflow_path: ".kiln/workflow.yaml",
      commit_sha: tenant.git.headSha,
    });
    expect(noKey).toMatchObject({ status: 400, json: { error: { code: "IDEMPOTENCY.KEY_REQUIRED" } } });
  });

  it("webhook signatures: missing, sha1-only or wrong -> 401 and no run", async () => {
    const body = pushBody(tenant.repoName, tenant.git.headSha);
    const post = (headers: Record<string, string>) =>
      fetch(`${p.base}/v1/webhooks/github`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-github-event": "push",
          "x-github-delivery": `sig-${Math.random()}`,
          ...headers,
        },
        body,
      });
    expect((await post({})).status).toBe(401);
    expect((await post({ "x-hub-signature": "sha1=0000000000000000000000000000000000000000" })).status).toBe(401);
    expect((await post({ "x-hub-signature-256": await sign("not-the-secret", body) })).status).toBe(401);
    const n = await p.db.$queryRaw<
      { n: bigint }[]
    >`SELECT count(*) AS n FROM webhook_delivery WHERE delivery_id LIKE 'sig-%'`;
    expect(n[0]?.n).toBe(0n);
    const health = await fetch(`${p.base}/healthz`);
    expect(health.status).toBe(200);
  });
});
