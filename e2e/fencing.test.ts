import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Platform } from "./support/platform.ts";

// The seed's headline, minus artifacts (issue #5 adds them): an agent frozen mid-job loses its lease,
// a second agent runs the replacement attempt to success, and the first agent, resumed, publishes
// nothing and destroys its sandbox.
const p = new Platform({ KILN_LEASE_TTL_MS: "2000", KILN_HEARTBEAT_MS: "400" });

beforeAll(async () => {
  await p.start();
}, 180_000);
afterAll(async () => {
  await p.stop();
});

describe("fencing a frozen agent", () => {
  it("replacement wins with epoch 2; the resumed agent's attempt is refused", async () => {
    const t = await p.seedTenant("frozen", {
      ".kiln/workflow.yaml": 'version: 1\njobs:\n  - name: work\n    steps: ["sleep 3", "echo finished"]\n',
    });
    const first = await p.startAgent("agent-a", t.agentToken);
    const r = await p.api(
      "POST",
      `/v1/repos/${t.repoId}/workflow-runs`,
      t.token,
      { workflow_path: ".kiln/workflow.yaml", commit_sha: t.git.headSha },
      { "idempotency-key": "freeze-1" },
    );
    expect(r.status).toBe(202);
    await p.waitForRun(r.json.run_id, t.token, (x) => x.jobs[0]?.status === "running");
    first.child.kill("SIGSTOP");
    // Lease (2 s) runs out; the reconciler fences epoch 1 before a replacement can be claimed.
    const fenced = await p.waitForRun(
      r.json.run_id,
      t.token,
      (x) => x.jobs[0]?.attempts[0]?.status === "completed",
      15_000,
    );
    expect(fenced.jobs[0].attempts[0]).toMatchObject({ epoch: 1, outcome: "platform_failure", cause: "lease.expired" });
    await p.startAgent("agent-b", t.agentToken);
    const done = await p.waitForRun(r.json.run_id, t.token, (x) => x.status === "completed", 30_000);
    const before = first.output().length;
    first.child.kill("SIGCONT");
    expect(done.outcome).toBe("success");
    const attempts = done.jobs[0].attempts;
    expect(attempts.map((a: any) => [a.epoch, a.outcome])).toEqual([
      [1, "platform_failure"],
      [2, "success"],
    ]);
    expect(attempts[0].host).not.toBe(attempts[1].host);
    // Resumed, the first agent learns it was fenced (409 or its own watchdog) and destroys its
    // sandbox; it reports no success.
    const resumed = () => first.output().slice(before);
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline && !/sandbox destroyed/.test(resumed()))
      await new Promise((res) => setTimeout(res, 200));
    expect(resumed()).toMatch(/"msg":"stopping attempt".*"reason":"(fenced|lease_lost|stale_epoch|lease_expired)/);
    expect(resumed()).toMatch(/sandbox destroyed/);
    expect(resumed()).not.toMatch(/completion accepted/);
    const winners = await p.db.$queryRaw<
      { epoch: number }[]
    >`SELECT epoch FROM attempt WHERE outcome = 'success' AND run_id = ${r.json.run_id}::uuid`;
    expect(winners).toEqual([{ epoch: 2 }]);
    const after = await p.api("GET", `/v1/workflow-runs/${r.json.run_id}`, t.token);
    expect(after.json.jobs[0].attempts.map((a: any) => a.outcome)).toEqual(["platform_failure", "success"]);
  });
});
