import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FaultStack, sleep } from "./support/harness.ts";
import { ProtocolAgent } from "./support/protocol-agent.ts";

// Failure table rows "Required artifact is missing" and "Host lost during multipart upload" (issue 5's
// artifacts). e2e/artifacts.test.ts freezes an uploader (SIGSTOP); here the host is lost outright
// (SIGKILL), the protocol-level resume rule is driven directly, and a missing artifact must fail the
// job explicitly, never be substituted by an older run's bytes.
const BLOB_BYTES = 60 * 1024 * 1024;
const sha256 = (b: Buffer) => createHash("sha256").update(b).digest("hex");

const PIPELINE = (produce: string) => `version: 1
jobs:
  - name: produce
    steps: ["${produce}"]
    artifacts:
      publish:
        - {name: app, path: out/app.bin}
  - name: consume
    steps: ["sha256sum in/app.bin"]
    artifacts:
      restore:
        - {from_job: produce, name: app, path: in/app.bin}
`;

let s: FaultStack;

beforeAll(async () => {
  s = await FaultStack.create({
    env: { KILN_LEASE_TTL_MS: "6000", KILN_HEARTBEAT_MS: "1000", KILN_ARTIFACT_PART_MIB: "5" },
  });
  s.startWorkers();
  await s.startWeb();
}, 180_000);
afterAll(async () => {
  await s?.stop();
});

async function generations(runId: string) {
  return s.db.$queryRaw<
    { id: string; epoch: number; state: string; part_count: number; parts: bigint; bound: boolean }[]
  >`
    SELECT g.id, g.epoch, g.state, g.part_count, (SELECT count(*) FROM artifact_part p WHERE p.generation_id = g.id) AS parts,
           EXISTS (SELECT 1 FROM artifact_binding b WHERE b.generation_id = g.id) AS bound
    FROM artifact_generation g WHERE g.run_id = ${runId}::uuid AND g.name = 'app' ORDER BY g.created_at`;
}

describe("artifact faults", () => {
  it("required artifact missing: the job fails explicitly and an older run's artifact is never substituted", async () => {
    const t = await s.seedTenant("missing", {
      ".kiln/workflow.yaml": PIPELINE("mkdir -p out && echo good > out/app.bin"),
    });
    s.startAgent("agent-m", t.agentToken);
    const good = await s.trigger(t, "good");
    expect((await s.waitForRun(good.json.run_id, t.token, (x) => x.status === "completed", 90_000)).outcome).toBe(
      "success",
    );

    // Same repo, same artifact name; this commit's build forgets to write it.
    const sha = await t.git.commit({ ".kiln/workflow.yaml": PIPELINE("mkdir -p out && echo forgot") });
    const bad = await s.trigger(t, "bad", { sha });
    const run = await s.waitForRun(bad.json.run_id, t.token, (x) => x.status === "completed", 90_000);
    expect([run.outcome, run.cause]).toEqual(["user_failure", "artifact.missing"]);
    expect([run.jobs[0].outcome, run.jobs[0].cause]).toEqual(["user_failure", "artifact.missing"]);
    expect([run.jobs[1].outcome, run.jobs[1].cause, run.jobs[1].attempts.length]).toEqual([
      "cancelled",
      "needs.not_satisfied",
      0,
    ]);
    expect(await s.db.$queryRaw`SELECT id FROM artifact_binding WHERE run_id = ${run.id}::uuid`).toEqual([]);
    await s.signal("agent-m", "SIGKILL");

    // At the protocol level: an agent reporting success without the declared artifact sealed is not
    // believed. Each such report is a platform failure (artifact.required_missing) and retried, until
    // the retry budget (2) is spent and the job fails explicitly; nothing is ever bound.
    const sha2 = await t.git.commit({ ".kiln/workflow.yaml": PIPELINE("true") });
    const liar = new ProtocolAgent(s.baseUrl(), t.agentToken, "liar");
    await liar.register();
    const third = await s.trigger(t, "liar", { sha: sha2 });
    const answers: string[] = [];
    while (answers.at(-1) !== "platform_failure" && answers.length < 6) {
      const ticket = (await liar.claim(60_000))!;
      expect(ticket.runId).toBe(third.json.run_id);
      const r = await liar.complete(ticket, "success", { exit_code: 0 });
      answers.push(r.status === 200 ? r.json.job_outcome : `${r.status} ${r.json?.error?.code}`);
    }
    // Retried while the budget (2 retries) lasts, then failed explicitly. (Under heavy load one of the
    // scripted agent's leases may also run out first: that is a platform failure too, and retried.)
    expect(
      answers.slice(0, -1).every((a) => a === "retry_scheduled" || a === "409 ATTEMPT.LEASE_EXPIRED"),
      answers.join(),
    ).toBe(true);
    expect(answers.at(-1), answers.join()).toBe("platform_failure");
    const lied = await s.waitForRun(third.json.run_id, t.token, (x) => x.status === "completed", 30_000);
    const causes = lied.jobs[0].attempts.map((a: any) => `${a.outcome}/${a.cause}`);
    expect([lied.outcome, lied.jobs[0].cause], causes.join()).toEqual([
      "platform_failure",
      "artifact.required_missing",
    ]);
    expect(
      causes.every(
        (c: string) => c === "platform_failure/artifact.required_missing" || c === "platform_failure/lease.expired",
      ),
      causes.join(),
    ).toBe(true);
    expect(causes).toHaveLength(3);
    expect([lied.jobs[1].outcome, lied.jobs[1].attempts.length]).toEqual(["cancelled", 0]);
    expect(await s.db.$queryRaw`SELECT id FROM artifact_binding WHERE run_id = ${lied.id}::uuid`).toEqual([]);
  }, 240_000);

  it("host lost mid-upload: the replacement opens its own generation and uploads every part; the dead host's parts are never reused", async () => {
    const t = await s.seedTenant("hostlost", {
      ".kiln/workflow.yaml": PIPELINE(`mkdir -p out && head -c ${BLOB_BYTES} /dev/urandom > out/app.bin`),
    });
    s.startAgent("agent-a", t.agentToken, { env: { KILN_AGENT_SLOTS: "1" } });
    const r = await s.trigger(t, "lost-1");
    const runId = r.json.run_id as string;
    const [g1] = await s.waitForSql(
      async () => (await generations(runId)).filter((g) => g.epoch === 1 && Number(g.parts) > 0),
      120_000,
      10,
    );
    await s.signal("agent-a", "SIGKILL");
    const atLoss = (await generations(runId)).find((g) => g.id === g1!.id)!;
    expect(atLoss.state).toBe("uploading");
    expect(Number(atLoss.parts)).toBeLessThan(atLoss.part_count);

    s.startAgent("agent-b", t.agentToken, { env: { KILN_AGENT_SLOTS: "1" } });
    const run = await s.waitForRun(runId, t.token, (x) => x.status === "completed", 240_000);
    const history = JSON.stringify(
      run.jobs.map((j: any) => [j.name, j.attempts.map((x: any) => [x.epoch, x.host, x.outcome, x.cause])]),
    );
    expect(run.outcome, history).toBe("success");
    expect(run.jobs[0].attempts[0], history).toMatchObject({
      epoch: 1,
      host: "agent-a",
      outcome: "platform_failure",
      cause: "lease.expired",
    });
    const winner = run.jobs[0].attempts.find((a: any) => a.outcome === "success");
    const gens = await generations(runId);
    const bound = gens.filter((g) => g.bound);
    expect(bound).toHaveLength(1);
    // A new, attempt-scoped generation with every part uploaded by the replacement itself.
    expect(bound[0]).toMatchObject({ epoch: winner.epoch, state: "sealed" });
    expect(bound[0]!.id).not.toBe(g1!.id);
    expect(Number(bound[0]!.parts)).toBe(bound[0]!.part_count);
    const lost = gens.find((g) => g.id === g1!.id)!;
    expect([lost.bound, lost.state === "sealed"]).toEqual([false, false]);
    // The consumer restored (and verified) exactly the bound bytes.
    const list = await s.api("GET", `/v1/jobs/${run.jobs[0].id}/artifacts`, t.token);
    const served = await fetch(`${s.baseUrl()}/v1/jobs/${run.jobs[0].id}/artifacts/app`, {
      headers: { authorization: `Bearer ${t.token}` },
    });
    expect(sha256(Buffer.from(await served.arrayBuffer()))).toBe(list.json.artifacts[0].sha256);
    await s.signal("agent-b", "SIGKILL");
  }, 360_000);

  it("an upload resumes only within its still-authorized attempt; once fenced, that session is closed to it", async () => {
    const t = await s.seedTenant("resume", { ".kiln/workflow.yaml": PIPELINE("mkdir -p out && echo x > out/app.bin") });
    const agent = new ProtocolAgent(s.baseUrl(), t.agentToken, "resumer");
    await agent.register();
    const r = await s.trigger(t, "resume-1");
    const ticket = (await agent.claim(60_000))!;
    expect(ticket.runId).toBe(r.json.run_id);
    const bytes = Buffer.alloc(6 * 1024 * 1024, 7); // two 5 MiB parts
    const open = () =>
      agent.jobCall(ticket, "/artifacts/uploads", {
        epoch: ticket.epoch,
        name: "app",
        size_bytes: bytes.length,
        sha256: sha256(bytes),
        format: "file",
      });
    const first = await open();
    expect(first.status).toBe(200);
    const part1 = bytes.subarray(0, first.json.parts[0].size);
    const put = await fetch(first.json.parts[0].url, { method: "PUT", body: part1 });
    const rec = await agent.jobCall(ticket, `/artifacts/uploads/${first.json.generation_id}/parts`, {
      epoch: ticket.epoch,
      part_number: 1,
      size_bytes: part1.length,
      sha256: sha256(part1),
      etag: put.headers.get("etag") ?? "",
    });
    expect(rec.status).toBe(200);
    // Same attempt, lease still live: the session resumes, part 1 is already done.
    expect((await agent.heartbeat(ticket)).status).toBe(200);
    const again = await open();
    expect(again.json.generation_id).toBe(first.json.generation_id);
    expect(again.json.parts.map((p: any) => p.done)).toEqual([true, false]);
    // Silent past its lease: fenced. The session is no longer its to resume or finish.
    const fenced = await s.waitForRun(
      r.json.run_id,
      t.token,
      (x) => x.jobs[0]?.attempts[0]?.status === "completed",
      30_000,
    );
    const late = await open();
    expect(late.status, `${JSON.stringify(late.json)} after ${JSON.stringify(fenced.jobs[0].attempts)}`).toBe(409);
    expect(
      (await agent.jobCall(ticket, `/artifacts/uploads/${first.json.generation_id}/complete`, { epoch: ticket.epoch }))
        .status,
    ).toBe(409);
    await sleep(100);
    expect((await generations(r.json.run_id)).map((g) => [g.epoch, g.state === "sealed", g.bound])).toEqual([
      [1, false, false],
    ]);
  }, 120_000);
});
