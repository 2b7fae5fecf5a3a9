import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { addMember, createApiToken } from "@kiln/engine";
import { s3Env, startS3, type S3Handle } from "@kiln/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { screenshot, signIn, TestBrowser } from "./support/browser.ts";
import { Platform, type Proc } from "./support/platform.ts";

// Issue 18 end to end (docs/adr/0032, 0033): real web, workers (attestor, verifier, relay, deployer,
// reconciler), host agents, s3rver and git. Build once, attest, promote the one digest to staging
// (its deploy run restores exactly that artifact, gets the environment's variables and an OIDC token
// whose sub names the environment), soak, request production, approve as a second member in the
// dashboard's inbox, deployed; roll back; and a frozen deploy agent past its lease moves nothing
// while the environment's lock is held until the kill bound.
let s3: S3Handle;
let s3Dir = "";
let p: Platform;
// Wide enough that the second promotion below is made well inside the held window even on a loaded
// machine (the reconciler notices the lease's end on its own tick).
const SKEW_MS = 10_000;

beforeAll(async () => {
  s3Dir = await mkdtemp(path.join(os.tmpdir(), "kiln-e2e-env-s3-"));
  s3 = await startS3({ dataDir: s3Dir, bucket: "kiln" });
  p = new Platform({
    ...s3Env(s3),
    KILN_ARTIFACT_PART_MIB: "5",
    KILN_CLOCK_SKEW_BOUND_MS: String(SKEW_MS),
    KILN_IDENTITY_KEK_FILE: path.join(await mkdtemp(path.join(os.tmpdir(), "kiln-e2e-env-kek-")), "identity-kek"),
    KILN_DEV_LOGIN: "1",
    AUTH_SECRET: "e2e-only-session-secret-0123456789abcdef",
  });
  await p.start();
}, 180_000);
afterAll(async () => {
  await p?.stop();
  await s3?.stop();
  await rm(s3Dir, { recursive: true, force: true });
});

const BUILD = `version: 1
jobs:
  - name: compile
    steps: ["mkdir -p out && (echo app; date +%s%N; head -c 64 /dev/urandom | od -An -tx1) > out/app.txt"]
    artifacts:
      publish:
        - {name: app, path: out/app.txt}
  - name: test
    steps: ["grep -q app inputs/app.txt"]
    artifacts:
      restore:
        - {from_job: compile, name: app, path: inputs/app.txt}
`;
// The deploy workflow, read at the artifact's commit: checks the restored bytes against the digest
// Kiln gives it, prints its variables and the claims of its OIDC token.
const DEPLOY = `version: 1
jobs:
  - name: deploy
    steps:
      - |
        got=$(sha256sum "$KILN_ARTIFACT_PATH" | cut -d' ' -f1)
        [ "sha256:$got" = "$KILN_ARTIFACT_DIGEST" ] && echo "DIGEST_OK $got"
        echo "VARS env=$KILN_ENVIRONMENT api=$API_URL"
        tok=$(curl -sS -f -H "Authorization: Bearer $KILN_ID_TOKEN_REQUEST_TOKEN" "$KILN_ID_TOKEN_URL?audience=https://cloud.example")
        b=$(printf '%s' "$tok" | sed 's/.*"value":"\\([^"]*\\)".*/\\1/' | cut -d. -f2 | tr '_-' '/+')
        while [ $(( \${#b} % 4 )) -ne 0 ]; do b="$b="; done
        echo "CLAIMS $(printf '%s' "$b" | base64 -d)"
        sleep \${DEPLOY_SLEEP:-0}
`;

async function waitUntil<T>(
  f: () => Promise<T | null | undefined | false>,
  timeoutMs: number,
  what: string,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${p.logs().slice(-4000)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

interface Setup {
  org: string;
  repoId: string;
  admin: string;
  alice: string;
  bob: string;
  agent: Proc;
  headSha: string;
}

const agents: Proc[] = [];

async function setup(org: string): Promise<Setup> {
  const t = await p.seedTenant(org, { ".kiln/workflow.yaml": BUILD, ".kiln/deploy.yaml": DEPLOY }, { member: "alice" });
  await addMember(p.db, { orgSlug: org, login: "bob", role: "member", forgeId: 8_300_002 });
  const admin = (await createApiToken(p.db, { orgSlug: org, role: "admin", name: "admin" })).token;
  // Personal tokens acting as one member each (what `kiln token create <org> --member <login>` makes).
  const personal = async (login: string) => {
    const tok = await createApiToken(p.db, { orgSlug: org, role: "member", name: login });
    await p.db
      .$executeRaw`UPDATE api_token SET user_id = (SELECT id FROM app_user WHERE login = ${login}) WHERE id = ${tok.id}::uuid`;
    return tok.token;
  };
  // Agents of the default pool serve every org: the earlier case's agent is stopped first, so the
  // agent this case freezes is the one running its deploy.
  for (const a of agents.splice(0)) {
    const exited = new Promise((r) => a.child.once("exit", r));
    a.child.kill("SIGTERM");
    await exited;
  }
  const agent = await p.startAgent(`${org}-agent`, t.agentToken);
  agents.push(agent);
  return {
    org,
    repoId: t.repoId,
    admin,
    alice: await personal("alice"),
    bob: await personal("bob"),
    agent,
    headSha: t.git.headSha,
  };
}

/**
 * One build of the head commit; resolves to the attested `app` artifact of its compile job.
 * Triggered by alice's personal token: the run records her as its author, which separation of
 * duties needs (an org token's build has no author any approver can be told apart from, issue 28).
 */
async function build(s: Setup, key: string): Promise<{ artifactId: string; digest: string }> {
  const r = await p.api(
    "POST",
    `/v1/repos/${s.repoId}/workflow-runs`,
    s.alice,
    { workflow_path: ".kiln/workflow.yaml", commit_sha: s.headSha },
    { "idempotency-key": key },
  );
  expect(r.status).toBe(202);
  const run = await p.waitForRun(r.json.run_id, s.admin, (x) => x.status === "completed", 180_000);
  expect(run.outcome).toBe("success");
  const compile = run.jobs.find((j: any) => j.name === "compile");
  return waitUntil(
    async () => {
      const rows = await p.db.$queryRaw<{ generation_id: string; sha256: string }[]>`
        SELECT b.generation_id, g.sha256 FROM artifact_binding b JOIN artifact_generation g ON g.id = b.generation_id
        JOIN attestation a ON a.job_id = b.job_id AND a.state = 'verified'
        WHERE b.job_id = ${compile.id}::uuid AND b.name = 'app'`;
      return rows[0] ? { artifactId: rows[0].generation_id, digest: rows[0].sha256 } : null;
    },
    120_000,
    "the attestation to be verified",
  );
}

async function environment(s: Setup, name: string, after: string | null, production = false): Promise<string> {
  const r = await p.api("POST", `/v1/repos/${s.repoId}/environments`, s.admin, { name, after, production });
  expect(r.status).toBe(201);
  const id = r.json.id as string;
  expect(
    (await p.api("PUT", `/v1/environments/${id}/deploy-config`, s.admin, { workflow_path: ".kiln/deploy.yaml" }))
      .status,
  ).toBe(200);
  expect(
    (await p.api("PUT", `/v1/environments/${id}/variables/API_URL`, s.admin, { value: `https://${name}.example` }))
      .status,
  ).toBe(200);
  return id;
}

async function deployed(s: Setup, envId: string, promotionId: string): Promise<{ run_id: string; state: string }> {
  return waitUntil(
    async () => {
      const r = await p.api("GET", `/v1/environments/${envId}/deployments`, s.admin);
      const d = r.json.deployments.find((x: any) => x.promotion_id === promotionId);
      return d && ["succeeded", "failed"].includes(d.state) && r.json.lock === null ? d : null;
    },
    120_000,
    "the deploy run to finish and release the lock",
  );
}

async function deployLog(s: Setup, runId: string): Promise<string> {
  const run = (await p.api("GET", `/v1/workflow-runs/${runId}`, s.admin)).json;
  const r = await fetch(`${p.base}/v1/jobs/${run.jobs[0].id}/logs/raw?stream=stdout`, {
    headers: { authorization: `Bearer ${s.admin}` },
  });
  return r.text();
}

describe("environments: build once, promote by digest", () => {
  it("build, attest, staging, soak, production approved by a second member in the inbox, deployed; roll back", async () => {
    const s = await setup("envs-journey");
    const a1 = await build(s, "b1");
    const staging = await environment(s, "staging", null);
    const prod = await environment(s, "production", "staging", true);
    const policy = await p.api("GET", `/v1/environments/${prod}/policy`, s.admin);
    const gates = { ...policy.json.policy.gates, previous_environment: { soak_seconds: 3 } };
    const setPolicy = await p.api("PUT", `/v1/environments/${prod}/policy`, s.admin, {
      policy: { ...policy.json.policy, gates },
    });
    expect(setPolicy.status).toBe(200);

    const toStaging = await p.api("POST", `/v1/environments/${staging}/promotions`, s.alice, {
      artifact_id: a1.artifactId,
      reason: "ship",
    });
    expect(toStaging.status).toBe(201);
    expect(toStaging.json.decision.verdict).toBe("allow");
    const d1 = await deployed(s, staging, toStaging.json.id);
    expect(d1.state).toBe("succeeded");
    const log = await deployLog(s, d1.run_id);
    expect(log).toContain(`DIGEST_OK ${a1.digest}`);
    expect(log).toContain("VARS env=staging api=https://staging.example");
    const claims = JSON.parse(/^CLAIMS (.*)$/m.exec(log)?.[1] ?? "{}");
    expect(claims).toMatchObject({ sub: "repo:envs-journey/app:environment:staging", environment: "staging" });

    // Soak, then production: the approval gate holds it for a member other than the requester.
    await new Promise((r) => setTimeout(r, 3_500));
    const toProd = await p.api("POST", `/v1/environments/${prod}/promotions`, s.alice, {
      artifact_id: a1.artifactId,
      reason: "release",
    });
    expect(toProd.status).toBe(201);
    expect(toProd.json.state).toBe("pending");
    const self = await p.api("POST", `/v1/promotions/${toProd.json.id}/approvals`, s.alice, {
      decision: "approve",
      comment: "me",
    });
    expect(self.status).toBe(403);

    const browser = await TestBrowser.launch();
    try {
      const page = await browser.page();
      await signIn(page, p.base, "bob", `/orgs/${s.org}/approvals`);
      const item = page.locator(`[data-promotion="${toProd.json.id}"]`);
      await item.getByText("previous_environment").waitFor();
      await screenshot(page, "approvals-inbox");
      await item.getByLabel("Comment").fill("looks good");
      await item.getByRole("button", { name: "Approve" }).focus();
      await page.keyboard.press("Enter");
      // Live: the approved promotion leaves the inbox without a reload.
      await item.waitFor({ state: "detached" });
      await page.getByText("Nothing waiting for approval").waitFor();

      const d2 = await deployed(s, prod, toProd.json.id);
      expect(d2.state).toBe("succeeded");
      expect(await deployLog(s, d2.run_id)).toContain("VARS env=production api=https://production.example");

      await page.goto(`${p.base}/orgs/${s.org}/environments/${prod}`);
      await page.locator(`[data-testid="current-digest"][data-digest="${a1.digest}"]`).waitFor();
      await page.locator('[data-testid="lock-state"][data-state="free"]').waitFor();
      await page.getByRole("link", { name: "attestation record" }).waitFor();
      await page.locator('[data-testid="deploy-state"]', { hasText: "succeeded" }).first().waitFor();
      await screenshot(page, "environment-page");

      // Roll back staging to the first digest after a second build reached it.
      const a2 = await build(s, "b2");
      const second = await p.api("POST", `/v1/environments/${staging}/promotions`, s.alice, {
        artifact_id: a2.artifactId,
        reason: "next",
      });
      expect((await deployed(s, staging, second.json.id)).state).toBe("succeeded");
      const back = await p.api("POST", `/v1/environments/${staging}/rollbacks`, s.alice, {
        to_artifact_id: a1.artifactId,
        reason: "bad",
      });
      expect([200, 201]).toContain(back.status);
      const d3 = await deployed(s, staging, back.json.id);
      expect(await deployLog(s, d3.run_id)).toContain(`DIGEST_OK ${a1.digest}`);
      const env = await p.api("GET", `/v1/environments/${staging}/deployments`, s.admin);
      expect(env.json.deployments.map((d: any) => [d.kind, d.state])).toEqual([
        ["rollback", "succeeded"],
        ["promote", "succeeded"],
        ["promote", "succeeded"],
      ]);
    } finally {
      await browser.close();
    }
    const audit = await p.db.$queryRaw<{ kind: string }[]>`
      SELECT DISTINCT kind FROM audit_event WHERE org_id = (SELECT id FROM org WHERE slug = ${s.org}) AND kind LIKE 'deployment.%'`;
    expect(audit.map((a) => a.kind).sort()).toEqual(
      expect.arrayContaining([
        "deployment.finished",
        "deployment.lock_acquired",
        "deployment.lock_released",
        "deployment.started",
      ]),
    );
  }, 900_000);

  it("a frozen deploy agent past its lease moves nothing; the lock is held until the kill bound", async () => {
    const s = await setup("envs-frozen");
    const a1 = await build(s, "f1");
    // Built before the agent freezes: the second promotion needs an artifact of its own.
    const a2 = await build(s, "f2");
    const staging = await environment(s, "staging", null);
    await p.api("PUT", `/v1/environments/${staging}/variables/DEPLOY_SLEEP`, s.admin, { value: "60" });
    const first = await p.api("POST", `/v1/environments/${staging}/promotions`, s.alice, {
      artifact_id: a1.artifactId,
      reason: "go",
    });
    const runId = await waitUntil(
      async () => {
        const r = await p.api("GET", `/v1/environments/${staging}/deployments`, s.admin);
        return r.json.lock?.attempt_id ? (r.json.lock.run_id as string) : null;
      },
      120_000,
      "the deploy job to be claimed",
    );
    await waitUntil(async () => /VARS env=staging/.test(await deployLog(s, runId)), 60_000, "the deploy step to start");
    s.agent.child.kill("SIGSTOP");
    try {
      let last: unknown = null;
      const held = await waitUntil(
        async () => {
          const r = await p.api("GET", `/v1/environments/${staging}/deployments`, s.admin);
          last = r.json;
          return r.json.lock?.state === "kill_bound_pending" ? r.json : null;
        },
        60_000,
        "the lease to run out",
      ).catch(async (e: unknown) => {
        const attempts = await p.db.$queryRaw`
          SELECT a.status, a.outcome, a.cause, a.lease_expires_at, a.stopped_at, now() AS now FROM attempt a WHERE a.run_id = ${runId}::uuid`;
        const locks = await p.db.$queryRaw`SELECT * FROM deployment_lock WHERE run_id = ${runId}::uuid`;
        throw new Error(`${JSON.stringify({ last, attempts, locks })}\n${String(e).slice(0, 2000)}`);
      });
      const run = (await p.api("GET", `/v1/workflow-runs/${runId}`, s.admin)).json;
      // Never re-dispatched: one attempt, fenced as a platform failure.
      expect(run.jobs[0].attempts.map((x: any) => [x.epoch, x.outcome, x.cause])).toEqual([
        [1, "platform_failure", "lease.expired"],
      ]);
      const lease = await p.db.$queryRaw<
        { lease: Date }[]
      >`SELECT lease_expires_at AS lease FROM attempt WHERE run_id = ${runId}::uuid`;
      const bound = lease[0]!.lease.getTime() + SKEW_MS;
      expect(Math.abs(new Date(held.lock.release_after).getTime() - bound)).toBeLessThanOrEqual(1);
      // A second promotion meanwhile waits; nothing starts before the bound.
      const again = await p.api("POST", `/v1/environments/${staging}/promotions`, s.alice, {
        artifact_id: a2.artifactId,
        reason: "again",
      });
      expect(again.json.decision.verdict).toBe("allow");
      // The deployer takes the move from the outbox: wait for its record, then it must be waiting.
      const waiting = await waitUntil(
        async () => {
          const r = await p.api("GET", `/v1/environments/${staging}/deployments`, s.admin);
          return r.json.deployments.find((d: any) => d.promotion_id === again.json.id) ?? null;
        },
        30_000,
        "the second promotion's deployment record",
      );
      expect(waiting.state).toBe("waiting");
      const released = await waitUntil(
        async () => {
          const r = await p.db.$queryRaw<{ released_at: Date; release_reason: string }[]>`
            SELECT released_at, release_reason FROM deployment_lock WHERE run_id = ${runId}::uuid AND released_at IS NOT NULL`;
          return r[0] ?? null;
        },
        30_000,
        "the kill bound",
      );
      expect(released.release_reason).toBe("kill_bound_elapsed");
      // Nothing started before the bound: the waiting deployment starts only after the release.
      const second = await p.db.$queryRaw<{ started_at: Date | null }[]>`
        SELECT started_at FROM deployment WHERE promotion_id = ${again.json.id}::uuid`;
      if (second[0]?.started_at) expect(second[0].started_at.getTime()).toBeGreaterThanOrEqual(bound - 1);
      expect(released.released_at.getTime()).toBeGreaterThanOrEqual(bound - 1);
      expect(first.json.id).not.toBe(again.json.id);
    } finally {
      s.agent.child.kill("SIGCONT");
    }
    // Resumed, the old agent publishes nothing: still one attempt, the deployment failed.
    await new Promise((r) => setTimeout(r, 3_000));
    const after = (await p.api("GET", `/v1/workflow-runs/${runId}`, s.admin)).json;
    expect(after.jobs[0].attempts).toHaveLength(1);
    expect(after.outcome).toBe("platform_failure");
  }, 600_000);
});
