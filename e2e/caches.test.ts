import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { sign } from "@octokit/webhooks-methods";
import { addMember, createObjectStore, platformKey, signJobToken } from "@kiln/engine";
import { s3Env, startS3, type S3Handle } from "@kiln/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signIn, TestBrowser } from "./support/browser.ts";
import { Platform, type Proc } from "./support/platform.ts";

// Issue 8 end to end: real web server, workers, host agents (process driver), s3rver and git.
// A trusted run misses and saves; the next one hits the node-local tier, a fresh host hits object
// storage; a fork PR reads the trusted entry but its write is refused with the named reason in its
// log; tampered bytes in object storage are a miss on a fresh host and the job rebuilds from a clean
// checkout. Every byte goes agent <-> s3rver through presigned URLs.
let s3: S3Handle;
let s3Dir = "";
let p: Platform;
let tenant: Awaited<ReturnType<Platform["seedTenant"]>>;
let firstSha = "";

const WORKFLOW = `version: 1
jobs:
  - name: build
    steps:
      - |
        if [ -f deps/marker ]; then echo "restored: $(cat deps/marker) $(sha256sum < deps/sub/blob | cut -c1-16)"; exit 0; fi
        mkdir -p deps/sub && echo "built-by-$KILN_RUN_ID" > deps/marker
        head -c 300000 /dev/urandom > deps/sub/blob && ln -s sub/blob deps/link
        echo "built fresh $(sha256sum < deps/sub/blob | cut -c1-16)"
    cache:
      kind: dependencies
      version: deps-v1
      inputs: [lock.txt]
      paths: [deps]
`;

beforeAll(async () => {
  s3Dir = await mkdtemp(path.join(os.tmpdir(), "kiln-e2e-s3-"));
  s3 = await startS3({ dataDir: s3Dir, bucket: "kiln" });
  p = new Platform(
    {
      KILN_LEASE_TTL_MS: "15000",
      KILN_HEARTBEAT_MS: "1000",
      ...s3Env(s3),
      // The run page and the settings page are read through the dashboard at the end.
      KILN_DEV_LOGIN: "1",
      AUTH_SECRET: "e2e-only-session-secret-0123456789abcdef",
    },
    { untrustedOnProcess: true },
  ); // the fork PR runs on a process agent: this suite is about caches
  await p.start();
  tenant = await p.seedTenant(
    "caches",
    { ".kiln/workflow.yaml": WORKFLOW, "lock.txt": "left-pad@1.3.0\n" },
    { member: "dev" },
  );
  firstSha = tenant.git.headSha;
}, 180_000);
afterAll(async () => {
  await p?.stop();
  await s3?.stop();
  await rm(s3Dir, { recursive: true, force: true });
});

async function manualRun(key: string, commitSha = firstSha): Promise<any> {
  const r = await p.api(
    "POST",
    `/v1/repos/${tenant.repoId}/workflow-runs`,
    tenant.token,
    { workflow_path: ".kiln/workflow.yaml", commit_sha: commitSha },
    { "idempotency-key": key },
  );
  expect(r.status).toBe(202);
  return p.waitForRun(r.json.run_id, tenant.token, (x) => x.status === "completed", 120_000);
}

async function jobLog(jobId: string, stream: "stdout" | "stderr"): Promise<string> {
  const r = await fetch(`${p.base}/v1/jobs/${jobId}/logs/raw?stream=${stream}`, {
    headers: { authorization: `Bearer ${tenant.token}` },
  });
  expect(r.status).toBe(200);
  return r.text();
}

async function stopAgent(a: Proc): Promise<void> {
  const exited = new Promise((resolve) => a.child.once("exit", resolve));
  a.child.kill("SIGTERM");
  await exited;
}

async function stats(runId: string) {
  return p.db.$queryRaw<
    {
      restore_result: string | null;
      restore_tier: string | null;
      restore_exact: boolean | null;
      save_result: string | null;
      save_reason: string | null;
      bytes_restored: bigint | null;
    }[]
  >`
    SELECT restore_result, restore_tier, restore_exact, save_result, save_reason, bytes_restored FROM cache_job_stat WHERE run_id = ${runId}::uuid`;
}

describe("build caches across runs and hosts", () => {
  let builtBy = "";
  let secondRunId = "";
  let firstRunId = "";
  let agentA: Proc;
  let agentB: Proc;
  let agentC: Proc;

  it("a trusted run misses and saves; the next run restores it from the node-local tier", async () => {
    agentA = await p.startAgent("agent-a", tenant.agentToken);
    const first = await manualRun("cache-1");
    firstRunId = first.id;
    expect(first).toMatchObject({ outcome: "success", trust_class: "trusted" });
    const out1 = await jobLog(first.jobs[0].id, "stdout");
    expect(out1).toMatch(/built fresh [0-9a-f]{16}/);
    builtBy = `built-by-${first.id} ${/built fresh ([0-9a-f]{16})/.exec(out1)![1]}`;
    const err1 = await jobLog(first.jobs[0].id, "stderr");
    expect(err1).toContain("[kiln] cache miss: no entry for this key");
    expect(err1).toMatch(/\[kiln\] cache saved: \d+ bytes/);
    expect(await stats(first.id)).toEqual([expect.objectContaining({ restore_result: "miss", save_result: "saved" })]);

    const second = await manualRun("cache-2");
    secondRunId = second.id;
    expect(second.outcome).toBe("success");
    expect(await jobLog(second.jobs[0].id, "stdout")).toContain(`restored: ${builtBy}`);
    const err2 = await jobLog(second.jobs[0].id, "stderr");
    expect(err2).toMatch(/\[kiln\] cache hit \(node-local\): restored \d+ bytes/);
    // An exact hit is not packed again: the key already holds these bytes.
    expect(err2).toContain("[kiln] cache not saved: it was restored from this exact key");
    expect(await stats(second.id)).toEqual([
      expect.objectContaining({ restore_result: "hit", restore_tier: "local", save_result: "skipped" }),
    ]);
  }, 300_000);

  it("a fresh host restores from object storage; a fork PR reads it but its write is refused", async () => {
    await stopAgent(agentA);
    agentB = await p.startAgent("agent-b", tenant.agentToken);
    const third = await manualRun("cache-3");
    expect(await jobLog(third.jobs[0].id, "stdout")).toContain(`restored: ${builtBy}`);
    expect(await jobLog(third.jobs[0].id, "stderr")).toMatch(
      /\[kiln\] cache hit \(object storage\): restored \d+ bytes/,
    );

    const body = JSON.stringify({
      action: "opened",
      number: 41,
      pull_request: {
        head: { sha: firstSha, ref: "feature", repo: { full_name: "outsider/app" } },
        base: { repo: { full_name: tenant.repoName } },
        user: { login: "outsider" },
      },
      repository: { full_name: tenant.repoName },
      sender: { login: "outsider" },
    });
    const hook = await fetch(`${p.base}/v1/webhooks/github`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-github-event": "pull_request",
        "x-github-delivery": "cache-fork-1",
        "x-hub-signature-256": await sign(tenant.secret, body),
      },
      body,
    });
    expect(hook.status).toBe(202);
    const { run_id: forkRunId } = (await hook.json()) as { run_id: string };
    const fork = await p.waitForRun(forkRunId, tenant.token, (x) => x.status === "completed", 120_000);
    expect(fork).toMatchObject({ outcome: "success", trust_class: "untrusted" });
    expect(await jobLog(fork.jobs[0].id, "stdout")).toContain(`restored: ${builtBy}`);
    expect(await jobLog(fork.jobs[0].id, "stderr")).toContain("[kiln] cache write refused: untrusted run");
    expect(await stats(forkRunId)).toEqual([
      expect.objectContaining({
        restore_result: "hit",
        save_result: "refused",
        save_reason: "cache write refused: untrusted run",
      }),
    ]);
    const written = await p.db.$queryRaw<
      { n: bigint }[]
    >`SELECT count(*) AS n FROM cache_entry WHERE run_id = ${forkRunId}::uuid`;
    expect(Number(written[0]?.n)).toBe(0);
  }, 300_000);

  it("a changed lock file falls back to the newest dependency entry with the same prefix, then saves its own key", async () => {
    const sha = await tenant.git.commit({ "lock.txt": "left-pad@1.3.1\n" });
    const run = await manualRun("cache-prefix", sha);
    expect(run.outcome).toBe("success");
    expect(await jobLog(run.jobs[0].id, "stdout")).toContain(`restored: ${builtBy}`);
    const err = await jobLog(run.jobs[0].id, "stderr");
    expect(err).toMatch(/\[kiln\] cache hit \(node-local, newest entry with the same prefix\): restored \d+ bytes/);
    expect(err, err).toMatch(/\[kiln\] cache saved: \d+ bytes/);
    expect(await stats(run.id)).toEqual([
      expect.objectContaining({ restore_result: "hit", restore_exact: false, save_result: "saved" }),
    ]);
  }, 300_000);

  it("tampered bytes in object storage: a miss on a fresh host, nothing extracted, a clean rebuild", async () => {
    const entries = await p.db.$queryRaw<
      { object_key: string }[]
    >`SELECT object_key FROM cache_entry WHERE state = 'bound' AND run_id = ${firstRunId}::uuid`;
    expect(entries).toHaveLength(1);
    const store = createObjectStore({
      endpoint: s3.endpoint,
      region: "us-east-1",
      accessKeyId: s3.accessKeyId,
      secretAccessKey: s3.secretAccessKey,
    });
    const key = entries[0]!.object_key;
    const original = Buffer.from(
      await (await store.send(new GetObjectCommand({ Bucket: "kiln", Key: key }))).Body!.transformToByteArray(),
    );
    const tampered = Buffer.from(original);
    tampered[tampered.length - 20] = (tampered[tampered.length - 20] ?? 0) ^ 0xff;
    await store.send(new PutObjectCommand({ Bucket: "kiln", Key: key, Body: tampered }));
    store.destroy();

    // agent-b holds a verified node-local copy; a third host only has object storage.
    await stopAgent(agentB);
    agentC = await p.startAgent("agent-c", tenant.agentToken);
    const fourth = await manualRun("cache-4");
    expect(fourth.outcome).toBe("success");
    expect(await jobLog(fourth.jobs[0].id, "stdout")).toMatch(/built fresh [0-9a-f]{16}/);
    const err = await jobLog(fourth.jobs[0].id, "stderr");
    expect(err).toMatch(
      /\[kiln\] cache miss: object storage copy rejected: (archive digest mismatch|file .* does not match|the archive is malformed)/,
    );
    // Its own save of other bytes under the bound key is a conflict, not an overwrite.
    expect(err).toContain("[kiln] cache not saved: this key already holds other bytes");
    const conflicts = await p.db.$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM cache_conflict`;
    expect(Number(conflicts[0]?.n)).toBe(1);
    expect(await stats(fourth.id)).toEqual([
      expect.objectContaining({ restore_result: "miss", save_result: "conflict" }),
    ]);
  }, 300_000);

  it("the bound blob gone from object storage: a miss and a clean rebuild, whose save replaces the dead entry", async () => {
    const entries = await p.db.$queryRaw<
      { object_key: string }[]
    >`SELECT object_key FROM cache_entry WHERE state = 'bound' AND run_id = ${firstRunId}::uuid`;
    expect(entries).toHaveLength(1);
    const store = createObjectStore({
      endpoint: s3.endpoint,
      region: "us-east-1",
      accessKeyId: s3.accessKeyId,
      secretAccessKey: s3.secretAccessKey,
    });
    await store.send(new DeleteObjectCommand({ Bucket: "kiln", Key: entries[0]!.object_key }));
    store.destroy();
    // agent-c never kept a node-local copy (its restore was rejected); a fourth host has nothing.
    await stopAgent(agentC);
    const agentD = await p.startAgent("agent-d", tenant.agentToken);
    const fifth = await manualRun("cache-5");
    expect(fifth.outcome).toBe("success");
    expect(await jobLog(fifth.jobs[0].id, "stdout")).toMatch(/built fresh [0-9a-f]{16}/);
    const err = await jobLog(fifth.jobs[0].id, "stderr");
    expect(err).toMatch(/\[kiln\] cache miss: /);
    // The dead entry no longer holds the key: the control plane found its blob gone when this run's
    // verified save arrived, evicted it (blob_missing) and bound the new bytes. Not a conflict.
    expect(err, err).toMatch(/\[kiln\] cache saved: \d+ bytes/);
    expect(await stats(fifth.id)).toEqual([
      expect.objectContaining({ restore_result: "miss", bytes_restored: 0n, save_result: "saved" }),
    ]);
    const lost = await p.db.$queryRaw<
      { state: string }[]
    >`SELECT state FROM cache_entry WHERE run_id = ${firstRunId}::uuid`;
    expect(lost).toEqual([{ state: "evicted" }]);
    const events = await p.db.$queryRaw<
      { n: bigint }[]
    >`SELECT count(*) AS n FROM transition_event WHERE entity = 'cache' AND reason = 'blob_missing'`;
    expect(events[0]?.n).toBe(1n);
    // And the next fresh host restores the new bytes from object storage.
    await stopAgent(agentD);
    await p.startAgent("agent-e", tenant.agentToken);
    const sixth = await manualRun("cache-6");
    expect(sixth.outcome).toBe("success");
    expect(await jobLog(sixth.jobs[0].id, "stdout")).toMatch(/restored: built-by-/);
  }, 300_000);

  it("a manual trigger names a ref its commit must be on (default: the default branch), else a 4xx with a code", async () => {
    const trigger = (key: string, body: Record<string, unknown>) =>
      p.api("POST", `/v1/repos/${tenant.repoId}/workflow-runs`, tenant.token, body, { "idempotency-key": key });
    const base = { workflow_path: ".kiln/workflow.yaml", commit_sha: firstSha };
    // The runs above named no ref: they ran (and cached) as the default branch.
    const refs = await p.db.$queryRaw<{ ref: string | null }[]>`
      SELECT DISTINCT ref FROM workflow_run WHERE repo_id = ${tenant.repoId}::uuid AND trigger = 'manual'`;
    expect(refs).toEqual([{ ref: "refs/heads/main" }]);
    const unknown = await trigger("ref-unknown", { ...base, ref: "no-such-branch" });
    expect(unknown).toMatchObject({ status: 422, json: { error: { code: "REPO.REF_NOT_FOUND" } } });
    // A commit from another repository's history (a fork's head, say) is not on main.
    const elsewhere = await p.git.createRepo("caches-elsewhere.git", { "x.txt": "not ours\n" });
    const foreign = await trigger("ref-foreign", { ...base, commit_sha: elsewhere.headSha });
    expect(foreign).toMatchObject({ status: 422, json: { error: { code: "RUN.COMMIT_NOT_ON_REF" } } });
    expect((await trigger("ref-bad", { ...base, ref: "refs/pull/1/head" })).status).toBe(400);
  });

  it("a finished or stale epoch gets 409 on every cache call; bad bodies get 4xx, never a 500", async () => {
    const jobs = await p.db.$queryRaw<{ job_id: string; attempt_id: string }[]>`
      SELECT a.job_id, a.id AS attempt_id FROM attempt a JOIN workflow_run r ON r.id = a.run_id WHERE r.trust_class = 'trusted' ORDER BY a.claimed_at LIMIT 1`;
    const { job_id: jobId, attempt_id: attemptId } = jobs[0]!;
    const token = signJobToken(await platformKey(p.db), { jobId, attemptId, epoch: 1 });
    const inputs = [{ path: "lock.txt", sha256: "a".repeat(64) }];
    const calls: [string, unknown][] = [
      ["caches/restore", { epoch: 1, inputs }],
      [
        "caches/saves",
        { epoch: 1, inputs, size_bytes: 10, sha256: "b".repeat(64), unpacked_bytes: 10, entry_count: 1 },
      ],
      [`caches/saves/${"0".repeat(8)}-0000-4000-8000-${"0".repeat(12)}/complete`, { epoch: 1 }],
      ["caches/stats", { epoch: 1, save: { result: "saved", reason: null, bytes: 1, ms: 1 } }],
    ];
    for (const [route, body] of calls) {
      const r = await p.api("POST", `/v1/agent/jobs/${jobId}/${route}`, token, body);
      expect([route, r.status, r.json.error?.code]).toEqual([route, 409, "ATTEMPT.STALE_EPOCH"]);
    }
    for (const bad of [
      {},
      { epoch: 1 },
      { epoch: 1, inputs: [{ path: "", sha256: "x" }] },
      { epoch: "1", inputs },
      { epoch: 1, inputs, extra: true },
    ]) {
      const r = await p.api("POST", `/v1/agent/jobs/${jobId}/caches/restore`, token, bad);
      expect(r.status).toBeGreaterThanOrEqual(400);
      expect(r.status).toBeLessThan(500);
      expect(typeof r.json.error.code).toBe("string");
    }
    const bogusEntry = await p.api("POST", `/v1/agent/jobs/${jobId}/caches/saves/not-a-uuid/complete`, token, {
      epoch: 1,
    });
    expect(bogusEntry.status).toBeGreaterThanOrEqual(400);
    expect(bogusEntry.status).toBeLessThan(500);
  }, 60_000);

  it("the run page shows each job's cache figures; the settings page shows conflicts to admins", async () => {
    await addMember(p.db, { orgSlug: "caches", login: "ada", role: "admin" });
    const browser = await TestBrowser.launch();
    try {
      const page = await browser.page();
      await signIn(page, p.base, "ada", "/orgs/caches");
      await page.goto(`${p.base}/orgs/caches/runs/${secondRunId}`);
      const caches = page.getByTestId("caches");
      await caches.waitFor({ timeout: 60_000 });
      const text = (await caches.textContent()) ?? "";
      expect(text).toContain("hit (node-local)");
      expect(text).toContain("skipped");
      expect(await page.getByTestId("cache-org").textContent()).toMatch(/trusted \d+% hit rate/);
      await page.goto(`${p.base}/orgs/caches/settings`);
      const conflicts = page.getByTestId("cache-conflicts");
      await conflicts.waitFor({ timeout: 60_000 });
      expect(await conflicts.locator("tbody tr").count()).toBe(1);
      expect(await conflicts.textContent()).toContain(tenant.repoName);
    } finally {
      await browser.close();
    }
  }, 180_000);
});
