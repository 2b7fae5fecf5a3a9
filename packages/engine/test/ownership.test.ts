import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { claimJob, type JobTicket } from "../src/dispatch/claim-job.ts";
import { heartbeat } from "../src/attempts/heartbeat.ts";
import { completeAttempt } from "../src/attempts/complete-attempt.ts";
import { reconcile } from "../src/attempts/reconcile.ts";
import { cancelRun } from "../src/runs/cancel-run.ts";
import { registerSession } from "../src/dispatch/register-session.ts";
import { createAgentToken } from "../src/tenants/admin.ts";
import { hashSecret } from "../src/identity/tokens.ts";
import {
  def,
  newSession,
  ONE_JOB,
  runStatus,
  seedFrozenRun,
  seedTenant,
  TEST_CFG,
  TWO_JOBS,
  useTestDb,
} from "./support.ts";

const t = useTestDb();

async function claim(sessionId: string, cfg = TEST_CFG): Promise<JobTicket | null> {
  const r = await claimJob(t.db(), cfg, { sessionId, claimRequestId: randomUUID() });
  return r.kind === "claimed" ? r.ticket : null;
}

function ok(ticket: JobTicket, outcome: "success" | "user_failure" | "platform_failure" | "cancelled" = "success") {
  return completeAttempt(t.db(), TEST_CFG, {
    attemptId: ticket.attemptId,
    jobId: ticket.jobId,
    epoch: ticket.epoch,
    outcome,
    sandboxDestroyed: true,
  });
}

describe("claim", () => {
  it("gives one job to exactly one of 8 racing claimers", async () => {
    const tenant = await seedTenant(t.db());
    const sessions = await Promise.all(Array.from({ length: 8 }, (_, i) => newSession(t.db(), tenant, 10, `h${i}`)));
    const runId = await seedFrozenRun(t.db(), tenant, def(ONE_JOB));
    const results = await Promise.all(sessions.map((s) => claim(s)));
    const winners = results.filter((r) => r && r.runId === runId);
    expect(winners).toHaveLength(1);
    expect(winners[0]?.epoch).toBe(1);
    const attempts = await t.db().$queryRaw<
      { n: bigint }[]
    >`SELECT count(*) AS n FROM attempt WHERE run_id = ${runId}::uuid`;
    expect(attempts[0]?.n).toBe(1n);
  });

  it("claims 40 parallel jobs once each under 8 concurrent claimers", async () => {
    const tenant = await seedTenant(t.db());
    const yaml = `version: 1\njobs:\n${Array.from({ length: 40 }, (_, i) => `  - name: j${i}\n    needs: []\n    steps: [true]\n`).join("")}`;
    const runId = await seedFrozenRun(t.db(), tenant, def(yaml));
    const sessions = await Promise.all(Array.from({ length: 8 }, (_, i) => newSession(t.db(), tenant, 100, `p${i}`)));
    const got: JobTicket[] = [];
    await Promise.all(
      sessions.map(async (s) => {
        for (;;) {
          const tk = await claim(s);
          if (!tk) return;
          if (tk.runId === runId) got.push(tk);
        }
      }),
    );
    expect(got).toHaveLength(40);
    expect(new Set(got.map((g) => g.jobId)).size).toBe(40);
  });

  it("checks the host credential inside the claim: unknown, revoked or another host's session gets nothing", async () => {
    const tenant = await seedTenant(t.db());
    const own = await createAgentToken(t.db(), { pool: tenant.pool });
    const other = await createAgentToken(t.db(), { pool: tenant.pool });
    const s = await registerSession(t.db(), TEST_CFG, {
      agentTokenId: own.id,
      pool: tenant.pool,
      body: {
        hostname: "h",
        capacity: 4,
        labels: { os: "linux", arch: "x64", resource_class: "small", isolation: "process" },
      },
    });
    const runId = await seedFrozenRun(t.db(), tenant, def(ONE_JOB));
    const attempt = (credentialHash: string) =>
      claimJob(t.db(), TEST_CFG, { sessionId: s.sessionId, claimRequestId: randomUUID(), credentialHash });
    await expect(attempt(hashSecret("kat_nobody"))).rejects.toMatchObject({ code: "AUTH.UNAUTHENTICATED" });
    await expect(attempt(hashSecret(other.token))).rejects.toMatchObject({ code: "SESSION.NOT_FOUND" });
    // A claim id containing quotes and backslashes is data, never SQL.
    const tricky = await claimJob(t.db(), TEST_CFG, {
      sessionId: s.sessionId,
      claimRequestId: "x'); DROP TABLE attempt; --\\'",
      credentialHash: hashSecret(own.token),
    });
    expect(tricky.kind === "claimed" && tricky.ticket.runId).toBe(runId);
    const rows = await t.db().$queryRaw<
      { claim_request_id: string }[]
    >`SELECT claim_request_id FROM attempt WHERE run_id = ${runId}::uuid`;
    expect(rows).toEqual([{ claim_request_id: "x'); DROP TABLE attempt; --\\'" }]);
    // Revoked after its session's pool was remembered: the claim's own statement still refuses it.
    await t.db().$executeRaw`UPDATE agent_token SET revoked_at = now() WHERE id = ${own.id}::uuid`;
    await expect(attempt(hashSecret(own.token))).rejects.toMatchObject({ code: "AUTH.CREDENTIAL_REVOKED" });
    const touched = await t.db().$queryRaw<
      { n: bigint }[]
    >`SELECT count(*) AS n FROM attempt WHERE session_id = ${s.sessionId}::uuid`;
    expect(touched[0]?.n).toBe(1n);
  });

  it("returns the same ticket for a retried claim request id", async () => {
    const tenant = await seedTenant(t.db());
    const s = await newSession(t.db(), tenant);
    await seedFrozenRun(t.db(), tenant, def(ONE_JOB));
    const id = randomUUID();
    const a = await claimJob(t.db(), TEST_CFG, { sessionId: s, claimRequestId: id });
    const b = await claimJob(t.db(), TEST_CFG, { sessionId: s, claimRequestId: id });
    expect(a.kind).toBe("claimed");
    expect(b.kind === "claimed" && b.replayed).toBe(true);
    if (a.kind === "claimed" && b.kind === "claimed") expect(b.ticket.attemptId).toBe(a.ticket.attemptId);
  });

  it("respects session capacity", async () => {
    const tenant = await seedTenant(t.db());
    const s = await newSession(t.db(), tenant, 1);
    await seedFrozenRun(
      t.db(),
      tenant,
      def(`version: 1\njobs:\n  - {name: a, needs: [], steps: [x]}\n  - {name: b, needs: [], steps: [x]}\n`),
    );
    expect(await claim(s)).not.toBeNull();
    const second = await claimJob(t.db(), TEST_CFG, { sessionId: s, claimRequestId: randomUUID() });
    expect(second).toEqual({ kind: "declined", reason: "no_capacity" });
  });

  it("refuses a stale dispatch generation offered by a duplicated hint", async () => {
    const tenant = await seedTenant(t.db());
    const s = await newSession(t.db(), tenant);
    await seedFrozenRun(t.db(), tenant, def(ONE_JOB));
    const tk = await claim(s);
    expect(tk).not.toBeNull();
    // FIFO mode tries the hinted job first: the generation/status check refuses it.
    const dup = await claimJob(
      t.db(),
      { ...TEST_CFG, dispatchPolicy: "fifo" },
      { sessionId: s, claimRequestId: randomUUID(), offer: { jobId: tk!.jobId, generation: 1 } },
    );
    expect(dup.kind).toBe("declined");
    // Fair mode treats the hint as a wake-up only; either way nothing is claimed twice.
    const fair = await claimJob(t.db(), TEST_CFG, {
      sessionId: s,
      claimRequestId: randomUUID(),
      offer: { jobId: tk!.jobId, generation: 1 },
    });
    expect(fair.kind).toBe("none");
    const attempts = await t.db().$queryRaw<
      { n: bigint }[]
    >`SELECT count(*) AS n FROM attempt WHERE job_id = ${tk!.jobId}::uuid`;
    expect(attempts[0]?.n).toBe(1n);
  });
});

describe("advancement", () => {
  it("makes the successor ready only after the predecessor succeeds, then finishes the run", async () => {
    const tenant = await seedTenant(t.db());
    const s = await newSession(t.db(), tenant);
    const runId = await seedFrozenRun(t.db(), tenant, def(TWO_JOBS));
    const first = await claim(s);
    expect(first?.job.name).toBe("compile");
    expect(await claim(s)).toBeNull();
    await ok(first!);
    const second = await claim(s);
    expect(second?.job.name).toBe("test");
    await ok(second!);
    expect(await runStatus(t.db(), runId)).toMatchObject({ status: "completed", outcome: "success" });
    const events = await t.db().$queryRaw<
      { n: bigint }[]
    >`SELECT count(*) AS n FROM transition_event WHERE run_id = ${runId}::uuid`;
    expect(Number(events[0]?.n)).toBeGreaterThanOrEqual(7);
  });

  it("a user failure is final: not retried, successors skipped, run outcome user_failure", async () => {
    const tenant = await seedTenant(t.db());
    const s = await newSession(t.db(), tenant);
    const runId = await seedFrozenRun(t.db(), tenant, def(TWO_JOBS));
    const first = await claim(s);
    await ok(first!, "user_failure");
    expect(await claim(s)).toBeNull();
    expect(await runStatus(t.db(), runId)).toMatchObject({
      status: "completed",
      outcome: "user_failure",
      cause: "step.failed",
    });
  });

  it("retries platform failures within the budget, then fails with platform_failure", async () => {
    const tenant = await seedTenant(t.db());
    const s = await newSession(t.db(), tenant);
    const runId = await seedFrozenRun(t.db(), tenant, def(ONE_JOB));
    const epochs: number[] = [];
    for (let i = 0; i < 3; i++) {
      const tk = await claim(s);
      expect(tk).not.toBeNull();
      epochs.push(tk!.epoch);
      await ok(tk!, "platform_failure");
    }
    expect(epochs).toEqual([1, 2, 3]);
    expect(await claim(s)).toBeNull();
    expect(await runStatus(t.db(), runId)).toMatchObject({ outcome: "platform_failure" });
  });
});

describe("fencing", () => {
  it("fences an expired lease, lets a replacement win, and refuses the old agent's late success", async () => {
    const tenant = await seedTenant(t.db());
    const short = { ...TEST_CFG, leaseTtlMs: 300 };
    const [s1, s2] = [await newSession(t.db(), tenant, 5, "old"), await newSession(t.db(), tenant, 5, "new")];
    const runId = await seedFrozenRun(t.db(), tenant, def(ONE_JOB));
    const old = await claim(s1, short);
    expect(old?.epoch).toBe(1);
    await new Promise((r) => setTimeout(r, 400));
    // The old agent is silent; its heartbeat is now refused even before the reconciler runs.
    await expect(
      heartbeat(t.db(), short, { attemptId: old!.attemptId, jobId: old!.jobId, epoch: 1 }),
    ).rejects.toMatchObject({ code: "ATTEMPT.LEASE_EXPIRED" });
    const rec = await reconcile(t.db(), short);
    expect(rec.fenced).toBe(1);
    // The replacement gets a normal lease: this machine may be slow, and only epoch 1 should expire.
    const replacement = await claim(s2);
    expect(replacement?.epoch).toBe(2);
    await expect(ok(old!)).rejects.toMatchObject({ code: "ATTEMPT.STALE_EPOCH" });
    await expect(
      heartbeat(t.db(), short, { attemptId: old!.attemptId, jobId: old!.jobId, epoch: 1 }),
    ).rejects.toMatchObject({ code: "ATTEMPT.STALE_EPOCH" });
    await completeAttempt(t.db(), TEST_CFG, {
      attemptId: replacement!.attemptId,
      jobId: replacement!.jobId,
      epoch: 2,
      outcome: "success",
      sandboxDestroyed: true,
    });
    expect(await runStatus(t.db(), runId)).toMatchObject({ status: "completed", outcome: "success" });
    const winners = await t.db().$queryRaw<
      { epoch: number }[]
    >`SELECT epoch FROM attempt WHERE run_id = ${runId}::uuid AND outcome = 'success'`;
    expect(winners).toEqual([{ epoch: 2 }]);
    const first = await t.db().$queryRaw<
      { outcome: string; cause: string }[]
    >`SELECT outcome, cause FROM attempt WHERE run_id = ${runId}::uuid AND epoch = 1`;
    expect(first[0]).toEqual({ outcome: "platform_failure", cause: "lease.expired" });
  });

  it("reconciling twice changes nothing the second time", async () => {
    const tenant = await seedTenant(t.db());
    const short = { ...TEST_CFG, leaseTtlMs: 200 };
    const s = await newSession(t.db(), tenant);
    await seedFrozenRun(t.db(), tenant, def(ONE_JOB));
    await claim(s, short);
    await new Promise((r) => setTimeout(r, 300));
    const [a, b] = await Promise.all([reconcile(t.db(), short), reconcile(t.db(), short)]);
    expect(a.fenced + b.fenced).toBe(1);
    expect((await reconcile(t.db(), short)).fenced).toBe(0);
  });

  it("a job token for epoch 1 cannot heartbeat as epoch 2", async () => {
    const tenant = await seedTenant(t.db());
    const s = await newSession(t.db(), tenant);
    await seedFrozenRun(t.db(), tenant, def(ONE_JOB));
    const tk = await claim(s);
    await expect(
      heartbeat(t.db(), TEST_CFG, { attemptId: tk!.attemptId, jobId: tk!.jobId, epoch: 2 }),
    ).rejects.toMatchObject({ code: "ATTEMPT.STALE_EPOCH" });
    const hb = await heartbeat(t.db(), TEST_CFG, { attemptId: tk!.attemptId, jobId: tk!.jobId, epoch: 1 });
    expect(new Date(hb.leaseExpiresAt).getTime()).toBeGreaterThan(Date.now());
  });
});

describe("cancel vs completion", () => {
  it("cancel first: the late success is refused and the run ends cancelled", async () => {
    const tenant = await seedTenant(t.db());
    const s = await newSession(t.db(), tenant);
    const runId = await seedFrozenRun(t.db(), tenant, def(TWO_JOBS));
    const tk = await claim(s);
    const c = await cancelRun(t.db(), { runId, orgId: tenant.orgId, actor: "test" });
    expect(c.status).toBe("cancelling");
    const hb = await heartbeat(t.db(), TEST_CFG, { attemptId: tk!.attemptId, jobId: tk!.jobId, epoch: 1 });
    expect(hb.cancelRequested).toBe(true);
    const r = await ok(tk!);
    expect(r).toEqual({ accepted: false, reason: "run_cancelled" });
    expect(await runStatus(t.db(), runId)).toMatchObject({ status: "completed", outcome: "cancelled" });
    const bound = await t.db().$queryRaw<
      { n: bigint }[]
    >`SELECT count(*) AS n FROM attempt WHERE run_id = ${runId}::uuid AND outcome = 'success'`;
    expect(bound[0]?.n).toBe(0n);
  });

  it("completion first: cancel sees the committed result", async () => {
    const tenant = await seedTenant(t.db());
    const s = await newSession(t.db(), tenant);
    const runId = await seedFrozenRun(t.db(), tenant, def(ONE_JOB));
    const tk = await claim(s);
    await ok(tk!);
    await expect(cancelRun(t.db(), { runId, orgId: tenant.orgId, actor: "test" })).rejects.toMatchObject({
      code: "RUN.ALREADY_FINISHED",
    });
    expect(await runStatus(t.db(), runId)).toMatchObject({ outcome: "success" });
  });

  it("racing cancel and completion: exactly one wins, never both", async () => {
    for (let i = 0; i < 10; i++) {
      const tenant = await seedTenant(t.db());
      const s = await newSession(t.db(), tenant);
      const runId = await seedFrozenRun(t.db(), tenant, def(ONE_JOB));
      const tk = await claim(s);
      const [comp, canc] = await Promise.allSettled([
        ok(tk!),
        cancelRun(t.db(), { runId, orgId: tenant.orgId, actor: "race" }),
      ]);
      const final = await runStatus(t.db(), runId);
      if (final.outcome === "success") {
        expect(comp.status === "fulfilled" && comp.value.accepted).toBe(true);
        expect(canc.status).toBe("rejected");
      } else {
        expect(final.outcome).toBe("cancelled");
        expect(canc.status).toBe("fulfilled");
        expect(comp.status === "fulfilled" && comp.value.accepted).toBe(false);
      }
    }
  });

  it("a cancelling run whose agent vanished settles once the lease expires", async () => {
    const tenant = await seedTenant(t.db());
    const short = { ...TEST_CFG, leaseTtlMs: 200 };
    const s = await newSession(t.db(), tenant);
    const runId = await seedFrozenRun(t.db(), tenant, def(ONE_JOB));
    await claim(s, short);
    await cancelRun(t.db(), { runId, orgId: tenant.orgId, actor: "test" });
    expect((await runStatus(t.db(), runId)).status).toBe("cancelling");
    await new Promise((r) => setTimeout(r, 300));
    await reconcile(t.db(), short);
    expect(await runStatus(t.db(), runId)).toMatchObject({ status: "completed", outcome: "cancelled" });
  });

  it("another org cannot cancel the run", async () => {
    const a = await seedTenant(t.db());
    const b = await seedTenant(t.db());
    const runId = await seedFrozenRun(t.db(), a, def(ONE_JOB));
    await expect(cancelRun(t.db(), { runId, orgId: b.orgId, actor: "x" })).rejects.toMatchObject({
      code: "RUN.NOT_FOUND",
    });
  });
});
