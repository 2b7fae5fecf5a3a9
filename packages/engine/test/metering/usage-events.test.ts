// Issue 33 item 3 (docs/adr/0045): one append-only usage row per finished attempt, written in the
// transaction that ends it, with the billable rules; against real PostgreSQL.
import { withTx } from "@kiln/db";
import { dispatch } from "@kiln/domain";
import { describe, expect, it } from "vitest";
import { finishAttempt } from "../../src/attempts/complete-attempt.ts";
import { lockAttempt } from "../../src/attempts/load-attempt.ts";
import { reconcile } from "../../src/attempts/reconcile.ts";
import { setPoolPolicy } from "../../src/dispatch/pool-policy.ts";
import { lockRun } from "../../src/runs/index.ts";
import { cancelRun } from "../../src/runs/cancel-run.ts";
import { def, newSession, ONE_JOB, seedFrozenRun, seedTenant, TEST_CFG, useTestDb } from "../support.ts";
import { backdate, claim, complete, tallySeconds, usageOf } from "./support.ts";

const t = useTestDb();

describe("usage_event", () => {
  it("a finished attempt has exactly one row with its facts, and billable seconds count for the org", async () => {
    const ten = await seedTenant(t.db());
    const s = await newSession(t.db(), ten);
    await seedFrozenRun(t.db(), ten, def(ONE_JOB));
    const tk = await claim(t.db(), s);
    await backdate(t.db(), tk.attemptId, 90);
    expect(await usageOf(t.db(), tk.attemptId)).toEqual([]);
    await complete(t.db(), tk, "user_failure");
    const rows = await usageOf(t.db(), tk.attemptId);
    expect(rows).toHaveLength(1);
    const u = rows[0];
    expect(u).toMatchObject({
      org_id: ten.orgId,
      repo_id: ten.repoId,
      pool: ten.pool,
      size: "small",
      isolation: "process",
      trust_class: "trusted",
      outcome: "user_failure",
      interruptible: false,
      self_hosted: false,
      billable: true,
    });
    expect(u?.seconds).toBeGreaterThanOrEqual(90);
    expect(u?.seconds).toBeLessThan(120);
    expect(await tallySeconds(t.db(), ten.orgId)).toBe(u?.seconds);
  });

  it("a stale completion (the epoch was fenced) writes no second row; the fence's row is not billable", async () => {
    const ten = await seedTenant(t.db());
    const s = await newSession(t.db(), ten);
    await seedFrozenRun(t.db(), ten, def(ONE_JOB));
    const tk = await claim(t.db(), s);
    await t.db()
      .$executeRaw`UPDATE attempt SET lease_expires_at = now() - interval '1 second' WHERE id = ${tk.attemptId}::uuid`;
    await reconcile(t.db(), TEST_CFG);
    const fenced = await usageOf(t.db(), tk.attemptId);
    expect(fenced).toMatchObject([{ outcome: "platform_failure", cause: "lease.expired", billable: false }]);
    await expect(complete(t.db(), tk)).rejects.toMatchObject({ code: expect.stringMatching(/^ATTEMPT\./) });
    expect(await usageOf(t.db(), tk.attemptId)).toHaveLength(1);
    // Not billable: nothing was counted against the org.
    expect(await tallySeconds(t.db(), ten.orgId)).toBe(0);
    // The retry's attempt has no row until it ends.
    const retry = await claim(t.db(), s);
    expect(await usageOf(t.db(), retry.attemptId)).toEqual([]);
    await complete(t.db(), retry);
    expect(await usageOf(t.db(), retry.attemptId)).toMatchObject([{ outcome: "success", billable: true }]);
  });

  it("an end whose transaction rolls back leaves no row", async () => {
    const ten = await seedTenant(t.db());
    const s = await newSession(t.db(), ten);
    const runId = await seedFrozenRun(t.db(), ten, def(ONE_JOB));
    const tk = await claim(t.db(), s);
    const boom = new Error("the completion failed after the attempt's end was written");
    await expect(
      withTx(t.db(), "rolled-back-completion", async (tx) => {
        await lockRun(tx, runId, "update");
        const a = await lockAttempt(tx, tk.attemptId);
        if (!a) throw new Error("no attempt");
        await finishAttempt(tx, a, "success", null, null);
        // Inside the transaction the row exists...
        const inside = await tx.$queryRaw<{ n: number }[]>`
          SELECT count(*)::int AS n FROM usage_event WHERE attempt_id = ${tk.attemptId}::uuid`;
        expect(inside[0]?.n).toBe(1);
        throw boom;
      }),
    ).rejects.toBe(boom);
    // ...and not after the rollback; the attempt is still running and completes normally.
    expect(await usageOf(t.db(), tk.attemptId)).toEqual([]);
    await complete(t.db(), tk);
    expect(await usageOf(t.db(), tk.attemptId)).toHaveLength(1);
  });

  it("preempted minutes (a platform failure, as a reclaim is) are recorded and not billable; a cancelled attempt is billable", async () => {
    const ten = await seedTenant(t.db());
    const s = await newSession(t.db(), ten);
    const runId = await seedFrozenRun(t.db(), ten, def(ONE_JOB));
    const tk = await claim(t.db(), s);
    await t.db().$executeRaw`UPDATE attempt SET preempt_requested = true WHERE id = ${tk.attemptId}::uuid`;
    await complete(t.db(), tk, "cancelled");
    expect(await usageOf(t.db(), tk.attemptId)).toMatchObject([
      { outcome: "platform_failure", cause: dispatch.PREEMPTED_CAUSE, billable: false },
    ]);
    const again = await claim(t.db(), s);
    await backdate(t.db(), again.attemptId, 30);
    await cancelRun(t.db(), { runId, orgId: ten.orgId, actor: "test" });
    await complete(t.db(), again, "cancelled");
    expect(await usageOf(t.db(), again.attemptId)).toMatchObject([{ billable: true }]);
    expect(await tallySeconds(t.db(), ten.orgId)).toBeGreaterThanOrEqual(30);
  });

  it("self-hosted (org pool) minutes are recorded but never counted against the quota", async () => {
    const ten = await seedTenant(t.db());
    await setPoolPolicy(t.db(), {
      name: ten.pool,
      minIsolation: "process",
      development: true,
      ownerOrg: ten.slug,
      actor: "test",
    });
    const s = await newSession(t.db(), ten);
    await seedFrozenRun(t.db(), ten, def(ONE_JOB));
    const tk = await claim(t.db(), s);
    await backdate(t.db(), tk.attemptId, 60);
    await complete(t.db(), tk);
    expect(await usageOf(t.db(), tk.attemptId)).toMatchObject([{ self_hosted: true, billable: true }]);
    expect(await tallySeconds(t.db(), ten.orgId)).toBe(0);
  });

  it("is append-only: UPDATE, DELETE and TRUNCATE are refused by the database", async () => {
    const ten = await seedTenant(t.db());
    const s = await newSession(t.db(), ten);
    await seedFrozenRun(t.db(), ten, def(ONE_JOB));
    const tk = await claim(t.db(), s);
    await complete(t.db(), tk);
    const refused = /usage_event is append-only/;
    await expect(
      t.db().$executeRaw`UPDATE usage_event SET billable = false WHERE attempt_id = ${tk.attemptId}::uuid`,
    ).rejects.toThrow(refused);
    await expect(t.db().$executeRaw`DELETE FROM usage_event WHERE attempt_id = ${tk.attemptId}::uuid`).rejects.toThrow(
      refused,
    );
    await expect(t.db().$executeRaw`TRUNCATE usage_event`).rejects.toThrow(refused);
    expect(await usageOf(t.db(), tk.attemptId)).toMatchObject([{ billable: true }]);
  });
});
