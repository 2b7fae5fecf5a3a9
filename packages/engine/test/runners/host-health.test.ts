import { AUTO_QUARANTINE_ACTOR, dispatch } from "@kiln/domain";
import { describe, expect, it } from "vitest";
import { completeAttempt, heartbeat, reconcile } from "../../src/attempts/index.ts";
import { revokeAgentToken } from "../../src/identity/agent-tokens.ts";
import { applyRunnerAction, listRunners } from "../../src/runners/index.ts";
import { def, newSession, ONE_JOB, seedFrozenRun, seedTenant, TEST_CFG, useTestDb } from "../support.ts";
import { claim, orgWithPool, registeredHost, runnerRow, runOnPool } from "./support.ts";

// Drain, quarantine and revoke (issue 22, ADR 0034), by admins and automatically, on PostgreSQL:
// what a host may still do in each state, and that another org's admin can do nothing to it.

const t = useTestDb();
const act = (
  orgId: string | null,
  runnerId: string,
  action: "drain" | "undrain" | "quarantine" | "unquarantine" | "revoke",
  reason?: string,
) =>
  applyRunnerAction(t.db(), {
    orgId,
    runnerId,
    action,
    actor: "test:admin",
    leaseTtlMs: 60_000,
    ...(reason ? { reason } : {}),
  });

async function failOnce(sessionId: string, orgPoolTenant: Awaited<ReturnType<typeof orgWithPool>>, cause: string) {
  await runOnPool(t.db(), orgPoolTenant);
  const ticket = await claim(t.db(), sessionId);
  if (!ticket) throw new Error("expected a ticket");
  await completeAttempt(t.db(), TEST_CFG, {
    attemptId: ticket.attemptId,
    jobId: ticket.jobId,
    epoch: ticket.epoch,
    outcome: "platform_failure",
    cause,
    sandboxDestroyed: true,
  });
}

describe("runner states", () => {
  it("drains: the running job keeps its lease, nothing new is claimed until undrained", async () => {
    const a = await orgWithPool(t.db());
    const host = await registeredHost(t.db(), a);
    await runOnPool(t.db(), a);
    await runOnPool(t.db(), a);
    const running = await claim(t.db(), host.sessionId);
    if (!running) throw new Error("expected a ticket");
    expect((await act(a.orgId, host.runnerId, "drain")).state).toBe("draining");
    expect(await claim(t.db(), host.sessionId)).toBeNull();
    await expect(heartbeat(t.db(), TEST_CFG, running)).resolves.toMatchObject({ cancelRequested: false });
    await completeAttempt(t.db(), TEST_CFG, { ...running, outcome: "success", sandboxDestroyed: true });
    // Draining twice changes nothing and records nothing more; undrain brings the host back.
    await act(a.orgId, host.runnerId, "drain");
    expect((await act(a.orgId, host.runnerId, "undrain")).state).toBe("online");
    expect(await claim(t.db(), host.sessionId)).not.toBeNull();
    const kinds = await t.db().$queryRaw<{ kind: string }[]>`
      SELECT kind FROM audit_event WHERE subject = ${host.runnerId} ORDER BY seq`;
    expect(kinds.map((k) => k.kind)).toEqual(["runner.registered", "runner.drained", "runner.undrained"]);
    const events = await t.db().$queryRaw<{ from_state: string | null; to_state: string }[]>`
      SELECT from_state, to_state FROM transition_event WHERE entity = 'runner' AND data->>'runner_id' = ${host.runnerId} ORDER BY id`;
    expect(events).toEqual([
      { from_state: null, to_state: "online" },
      { from_state: "online", to_state: "draining" },
      { from_state: "draining", to_state: "online" },
    ]);
  });

  it("refuses a quarantined host's claims with the reason until an admin lifts it", async () => {
    const a = await orgWithPool(t.db());
    const host = await registeredHost(t.db(), a);
    await runOnPool(t.db(), a);
    await expect(act(a.orgId, host.runnerId, "quarantine")).rejects.toMatchObject({ code: "REQUEST.INVALID" });
    const q = await act(a.orgId, host.runnerId, "quarantine", "disk errors");
    expect(q).toMatchObject({
      state: "quarantined",
      quarantine: { kind: "manual", reason: "disk errors", by: "test:admin" },
    });
    await expect(claim(t.db(), host.sessionId)).rejects.toMatchObject({ code: "RUNNER.QUARANTINED" });
    await expect(claim(t.db(), host.sessionId)).rejects.toThrow(/disk errors/);
    await expect(act(a.orgId, host.runnerId, "undrain")).rejects.toMatchObject({ code: "RUNNER.ILLEGAL_TRANSITION" });
    expect((await act(a.orgId, host.runnerId, "unquarantine")).quarantine).toBeNull();
    // The standing is cached for a second before the candidates are chosen.
    await new Promise((r) => setTimeout(r, 1_100));
    expect(await claim(t.db(), host.sessionId)).not.toBeNull();
  });

  it("revokes: claims and the running attempt's heartbeats are refused, its lease is fenced and retried", async () => {
    const a = await orgWithPool(t.db());
    const host = await registeredHost(t.db(), a);
    const other = await registeredHost(t.db(), a);
    const runId = await runOnPool(t.db(), a);
    const running = await claim(t.db(), host.sessionId);
    if (!running) throw new Error("expected a ticket");
    expect((await act(a.orgId, host.runnerId, "revoke")).state).toBe("revoked");
    await expect(claim(t.db(), host.sessionId)).rejects.toMatchObject({ code: "AUTH.CREDENTIAL_REVOKED" });
    await expect(heartbeat(t.db(), TEST_CFG, running)).rejects.toMatchObject({ code: "ATTEMPT.HOST_REVOKED" });
    const ended = await t.db().$queryRaw<{ ended: boolean }[]>`
      SELECT ended_at IS NOT NULL AS ended FROM agent_session WHERE id = ${host.sessionId}::uuid`;
    expect(ended[0]?.ended).toBe(true);
    await expect(act(a.orgId, host.runnerId, "unquarantine")).rejects.toMatchObject({
      code: "RUNNER.ILLEGAL_TRANSITION",
    });
    // Its lease lapses (the agent cannot renew it): fenced, retried on the other host.
    await t.db()
      .$executeRaw`UPDATE attempt SET lease_expires_at = now() - interval '1 second' WHERE id = ${running.attemptId}::uuid`;
    await reconcile(t.db(), TEST_CFG);
    const retried = await claim(t.db(), other.sessionId);
    expect(retried).toMatchObject({ runId, jobId: running.jobId, epoch: running.epoch + 1 });
  });

  it("marks the host revoked when an operator revokes its credential (kiln agent-token revoke)", async () => {
    const a = await orgWithPool(t.db());
    const host = await registeredHost(t.db(), a);
    const agent = await t.db().$queryRaw<
      { id: string }[]
    >`SELECT agent_token_id AS id FROM runner WHERE id = ${host.runnerId}::uuid`;
    await revokeAgentToken(t.db(), { id: agent[0]?.id ?? "", actor: "cli:ops" });
    await revokeAgentToken(t.db(), { id: agent[0]?.id ?? "", actor: "cli:ops" });
    expect((await runnerRow(t.db(), host.runnerId))?.state).toBe("revoked");
    const audit = await t.db().$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM audit_event WHERE subject = ${host.runnerId} AND kind = 'runner.revoked'`;
    expect(audit[0]?.n).toBe(1);
    await expect(claim(t.db(), host.sessionId)).rejects.toMatchObject({ code: "AUTH.CREDENTIAL_REVOKED" });
  });

  it("lets an org admin neither see nor act on another org's runners", async () => {
    const a = await orgWithPool(t.db());
    const b = await orgWithPool(t.db());
    const host = await registeredHost(t.db(), a);
    expect((await listRunners(t.db(), { orgId: b.orgId, leaseTtlMs: 60_000 })).map((r) => r.id)).not.toContain(
      host.runnerId,
    );
    for (const action of ["revoke", "drain", "quarantine"] as const)
      await expect(act(b.orgId, host.runnerId, action, "hostile")).rejects.toMatchObject({ code: "RUNNER.NOT_FOUND" });
    await expect(act(b.orgId, "not-a-uuid", "revoke")).rejects.toMatchObject({ code: "RUNNER.NOT_FOUND" });
    expect((await runnerRow(t.db(), host.runnerId))?.state).toBe("online");
    // Operators (no org) see every host.
    expect((await listRunners(t.db(), { orgId: null, leaseTtlMs: 60_000 })).map((r) => r.id)).toContain(host.runnerId);
  });
});

describe("automatic quarantine", () => {
  it("quarantines a host after 3 platform failures within 10 minutes, not counting preemptions", async () => {
    const a = await orgWithPool(t.db());
    const host = await registeredHost(t.db(), a);
    await failOnce(host.sessionId, a, dispatch.PREEMPTED_CAUSE);
    await failOnce(host.sessionId, a, "sandbox.create_failed");
    await failOnce(host.sessionId, a, "sandbox.create_failed");
    expect((await runnerRow(t.db(), host.runnerId))?.state).toBe("online");
    await failOnce(host.sessionId, a, "image.pull_failed");
    expect(await runnerRow(t.db(), host.runnerId)).toEqual({
      state: "quarantined",
      quarantine_kind: "platform_failures",
      quarantine_reason: "3 platform failures attributed to this host within 10 minutes",
      quarantined_by: AUTO_QUARANTINE_ACTOR,
    });
    await expect(claim(t.db(), host.sessionId)).rejects.toMatchObject({ code: "RUNNER.QUARANTINED" });
    const audit = await t.db().$queryRaw<{ actor: string; data: { kind: string } }[]>`
      SELECT actor, data FROM audit_event WHERE subject = ${host.runnerId} AND kind = 'runner.quarantined'`;
    expect(audit).toEqual([
      expect.objectContaining({
        actor: AUTO_QUARANTINE_ACTOR,
        data: expect.objectContaining({ kind: "platform_failures" }),
      }),
    ]);
    // Failures older than the window are forgotten: lifted, the host is online and stays so.
    await t.db().$executeRaw`UPDATE attempt SET finished_at = now() - interval '11 minutes'
      WHERE session_id = ${host.sessionId}::uuid`;
    await act(a.orgId, host.runnerId, "unquarantine");
    await new Promise((r) => setTimeout(r, 1_100));
    await failOnce(host.sessionId, a, "sandbox.create_failed");
    expect((await runnerRow(t.db(), host.runnerId))?.state).toBe("online");
  });

  it("leaves an operator-made credential alone: several agent processes may share it", async () => {
    const tenant = await seedTenant(t.db());
    const s = await newSession(t.db(), tenant);
    for (let i = 0; i < 3; i++) {
      await seedFrozenRun(t.db(), tenant, def(ONE_JOB));
      const ticket = await claim(t.db(), s);
      if (!ticket) throw new Error("expected a ticket");
      await completeAttempt(t.db(), TEST_CFG, {
        ...ticket,
        outcome: "platform_failure",
        cause: "x.y",
        sandboxDestroyed: true,
      });
    }
    const rows = await t.db().$queryRaw<{ state: string }[]>`
      SELECT state FROM runner WHERE agent_token_id = ${tenant.agentTokenId}::uuid`;
    expect(rows).toEqual([{ state: "online" }]);
  });

  it("quarantines a host whose leases keep expiring, from the reconciler's fencing transaction", async () => {
    const a = await orgWithPool(t.db());
    const host = await registeredHost(t.db(), a);
    for (let i = 0; i < 3; i++) {
      await runOnPool(t.db(), a);
      const ticket = await claim(t.db(), host.sessionId);
      if (!ticket) throw new Error("expected a ticket");
      await t.db()
        .$executeRaw`UPDATE attempt SET lease_expires_at = now() - interval '1 second' WHERE id = ${ticket.attemptId}::uuid`;
      await reconcile(t.db(), TEST_CFG);
    }
    expect(await runnerRow(t.db(), host.runnerId)).toMatchObject({
      state: "quarantined",
      quarantine_kind: "lease_expiries",
    });
    // Running the reconciler again changes nothing more.
    await reconcile(t.db(), TEST_CFG);
    const n = await t.db().$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM audit_event WHERE subject = ${host.runnerId} AND kind = 'runner.quarantined'`;
    expect(n[0]?.n).toBe(1);
  });
});
