import { createHash } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { PutObjectCommand } from "@aws-sdk/client-s3";
import { createObjectStore } from "@kiln/engine";
import { s3Env, startS3, type S3Handle } from "@kiln/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Platform, type Proc } from "./support/platform.ts";

// Issue 5 end to end: real web server, workers, host agents and s3rver. The seed's headline — an
// agent frozen halfway through uploading the JAR, a replacement on another agent that wins, and the
// consumer getting exactly the winner's bytes — plus a consumer refusing tampered bytes, a symlink
// escape, and a directory artifact round trip.
let s3: S3Handle;
let s3Dir = "";
let p: Platform;

beforeAll(async () => {
  s3Dir = await mkdtemp(path.join(os.tmpdir(), "kiln-e2e-s3-"));
  s3 = await startS3({ dataDir: s3Dir, bucket: "kiln" });
  p = new Platform({
    KILN_LEASE_TTL_MS: "6000",
    KILN_HEARTBEAT_MS: "500",
    KILN_RETRY_BUDGET: "4",
    ...s3Env(s3),
    KILN_ARTIFACT_PART_MIB: "5",
  });
  await p.start();
}, 180_000);
afterAll(async () => {
  await p?.stop();
  await s3?.stop();
  await rm(s3Dir, { recursive: true, force: true });
});

const JAR_BYTES = 60 * 1024 * 1024; // 12 parts of 5 MiB
const HEADLINE = `version: 1
jobs:
  - name: compile
    steps: ["mkdir -p target && head -c ${JAR_BYTES} /dev/urandom > target/app.jar"]
    artifacts:
      publish:
        - {name: app, path: target/app.jar}
  - name: test
    steps: ["sha256sum inputs/app.jar > digest.txt"]
    artifacts:
      restore:
        - {from_job: compile, name: app, path: inputs/app.jar}
      publish:
        - {name: digest, path: digest.txt}
`;

async function trigger(t: { repoId: string; token: string; git: { headSha: string } }, key: string): Promise<string> {
  const r = await p.api(
    "POST",
    `/v1/repos/${t.repoId}/workflow-runs`,
    t.token,
    { workflow_path: ".kiln/workflow.yaml", commit_sha: t.git.headSha },
    { "idempotency-key": key },
  );
  expect(r.status).toBe(202);
  return r.json.run_id as string;
}

async function waitUntil(pred: () => Promise<boolean>, timeoutMs: number, pollMs = 20): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await pred()) return;
    await new Promise((r) => setTimeout(r, pollMs));
  }
  throw new Error(`condition not met in ${timeoutMs} ms\n${p.logs()}`);
}

async function sha256OfUrl(url: string): Promise<string> {
  const res = await fetch(url);
  expect(res.status).toBe(200);
  const h = createHash("sha256");
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) h.update(chunk);
  return h.digest("hex");
}

describe("artifacts across agents", () => {
  it("a frozen uploader is fenced; the replacement's bytes are the ones the consumer gets", async () => {
    const t = await p.seedTenant("art-headline", { ".kiln/workflow.yaml": HEADLINE });
    const a: Proc = await p.startAgent("agent-a", t.agentToken);
    const runId = await trigger(t, "headline-1");
    // Freeze agent A as soon as it has recorded its first part: half an artifact, then silence.
    await waitUntil(async () => {
      const r = await p.db.$queryRaw<{ n: bigint }[]>`
        SELECT count(*) AS n FROM artifact_part x JOIN artifact_generation g ON g.id = x.generation_id WHERE g.run_id = ${runId}::uuid AND g.epoch = 1`;
      return (r[0]?.n ?? 0n) > 0n;
    }, 90_000);
    a.child.kill("SIGSTOP");
    const atFreeze = await p.db.$queryRaw<{ id: string; state: string; part_count: number; recorded: bigint }[]>`
      SELECT g.id, g.state, g.part_count, (SELECT count(*) FROM artifact_part x WHERE x.generation_id = g.id) AS recorded
      FROM artifact_generation g WHERE g.run_id = ${runId}::uuid AND g.epoch = 1`;
    const gen1 = atFreeze[0]!;
    expect(gen1.state).toBe("uploading");
    expect(Number(gen1.recorded)).toBeLessThan(gen1.part_count);

    await p.startAgent("agent-b", t.agentToken);
    const run = await p.waitForRun(runId, t.token, (x) => x.status === "completed", 300_000);
    const beforeResume = a.output().length;
    a.child.kill("SIGCONT");
    const history = JSON.stringify(
      run.jobs.map((j: any) => [j.name, j.attempts.map((x: any) => [x.epoch, x.host, x.outcome, x.cause])]),
    );
    expect(run.outcome, history).toBe("success");
    const compile = run.jobs[0];
    // Epoch 1 (the frozen agent) was fenced; a later epoch on agent B won. (On a loaded machine an
    // extra attempt may lose its lease in between; the invariants below hold either way.)
    expect(compile.attempts[0], history).toMatchObject({
      epoch: 1,
      outcome: "platform_failure",
      cause: "lease.expired",
    });
    const winner = compile.attempts.find((x: any) => x.outcome === "success");
    expect(winner.epoch).toBeGreaterThanOrEqual(2);
    expect(winner.host).not.toBe(compile.attempts[0].host);
    expect(winner.phases.artifact_finalization_ms).toBeGreaterThan(0);

    // The public API lists the winner's artifact only, and redirects to exactly those bytes.
    const list = await p.api("GET", `/v1/jobs/${compile.id}/artifacts`, t.token);
    expect(list.status).toBe(200);
    expect(list.json.artifacts).toHaveLength(1);
    const art = list.json.artifacts[0];
    expect(art).toMatchObject({ name: "app", size: JAR_BYTES, attempt_epoch: winner.epoch });
    const redirect = await fetch(`${p.base}/v1/jobs/${compile.id}/artifacts/app`, {
      headers: { authorization: `Bearer ${t.token}` },
      redirect: "manual",
    });
    expect(redirect.status).toBe(302);
    expect(await sha256OfUrl(redirect.headers.get("location")!)).toBe(art.sha256);
    // The consumer (on agent B) hashed what it restored and published that: the winner's digest.
    const digest = await fetch(`${p.base}/v1/jobs/${run.jobs[1].id}/artifacts/digest`, {
      headers: { authorization: `Bearer ${t.token}` },
    });
    expect(await digest.text()).toBe(`${art.sha256}  inputs/app.jar\n`);

    // Resumed, agent A learns it was fenced (409 or its own watchdog) and publishes nothing.
    const resumed = () => a.output().slice(beforeResume);
    await waitUntil(async () => /sandbox destroyed/.test(resumed()), 60_000, 200);
    expect(resumed()).not.toMatch(/artifact sealed|completion accepted/);
    const g1 = await p.db.$queryRaw<{ state: string; bound: boolean }[]>`
      SELECT state, EXISTS (SELECT 1 FROM artifact_binding b WHERE b.generation_id = g.id) AS bound FROM artifact_generation g WHERE g.id = ${gen1.id}::uuid`;
    expect(g1[0]).toMatchObject({ bound: false });
    expect(g1[0]?.state).not.toBe("sealed");

    const other = await p.seedTenant("art-other", { ".kiln/workflow.yaml": HEADLINE });
    expect((await p.api("GET", `/v1/jobs/${compile.id}/artifacts`, other.token)).status).toBe(404);
    expect((await p.api("GET", `/v1/jobs/${compile.id}/artifacts/app`, other.token)).status).toBe(404);
  }, 480_000);

  it("a consumer refuses bytes that changed after binding (artifact.digest_mismatch)", async () => {
    const wf = `version: 1
jobs:
  - name: compile
    steps: ["mkdir -p out && echo hello > out/a.txt"]
    artifacts: {publish: [{name: dist, path: out}]}
  - name: wait
    steps: ["sleep 4"]
  - name: check
    steps: ["cat inputs/dist/a.txt"]
    artifacts: {restore: [{from_job: compile, name: dist, path: inputs/dist}]}
`;
    const t = await p.seedTenant("art-tamper", { ".kiln/workflow.yaml": wf });
    const runId = await trigger(t, "tamper-1");
    const running = await p.waitForRun(runId, t.token, (x) => x.jobs[1]?.status === "running", 60_000);
    const key = await p.db.$queryRaw<{ object_key: string }[]>`
      SELECT g.object_key FROM artifact_binding b JOIN artifact_generation g ON g.id = b.generation_id WHERE b.job_id = ${running.jobs[0].id}::uuid`;
    const client = createObjectStore({
      endpoint: s3.endpoint,
      region: "us-east-1",
      accessKeyId: s3.accessKeyId,
      secretAccessKey: s3.secretAccessKey,
    });
    await client.send(
      new PutObjectCommand({ Bucket: "kiln", Key: key[0]!.object_key, Body: "not the tar that was sealed" }),
    );
    client.destroy();
    const run = await p.waitForRun(runId, t.token, (x) => x.status === "completed", 90_000);
    // Two honest refusals race here: the consumer's own digest check, or (when the attestor's
    // verifier re-hashed the object first) the quarantine it put on the artifact. Both are the
    // platform's failure, never the user's, and no attempt ever ran on the changed bytes.
    const refused = ["artifact.digest_mismatch", "artifact.quarantined"];
    expect(run.outcome).toBe("platform_failure");
    expect(refused).toContain(run.cause);
    expect(run.jobs[2].attempts.every((x: any) => refused.includes(x.cause))).toBe(true);
  }, 180_000);

  it("a symlink out of the workspace is a user failure; a directory artifact round-trips", async () => {
    const leak = await p.seedTenant("art-leak", {
      ".kiln/workflow.yaml": `version: 1
jobs:
  - name: leak
    steps: ["ln -s /etc/hostname out.txt"]
    artifacts: {publish: [{name: out, path: out.txt}]}
`,
    });
    const dir = await p.seedTenant("art-dir", {
      ".kiln/workflow.yaml": `version: 1
jobs:
  - name: build
    steps: ["mkdir -p out/sub && echo hello > out/sub/a.txt && ln -s sub/a.txt out/link"]
    artifacts: {publish: [{name: dist, path: out}]}
  - name: use
    steps: ["test \\"$(cat inputs/dist/link)\\" = hello && test -f inputs/dist/sub/a.txt"]
    artifacts: {restore: [{from_job: build, name: dist, path: inputs/dist}]}
`,
    });
    const [leakRun, dirRun] = [await trigger(leak, "leak-1"), await trigger(dir, "dir-1")];
    const l = await p.waitForRun(leakRun, leak.token, (x) => x.status === "completed", 60_000);
    expect(l).toMatchObject({ outcome: "user_failure", cause: "artifact.symlink_escape" });
    expect(l.jobs[0].attempts).toHaveLength(1);
    const d = await p.waitForRun(dirRun, dir.token, (x) => x.status === "completed", 60_000);
    expect(d.outcome).toBe("success");
  }, 180_000);
});
