import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { OUTCOMES } from "@kiln/domain";
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { completeAttempt } from "../src/attempts/complete-attempt.ts";
import { claimJob } from "../src/dispatch/claim-job.ts";
import { controlPlaneRegistry, countFencingRefusal, registerFleetMetrics } from "../src/metrics/index.ts";
import { def, newSession, ONE_JOB, seedFrozenRun, seedTenant, TEST_CFG, TWO_JOBS, useTestDb } from "./support.ts";

// The fleet gauges (docs/adr/0043) against real PostgreSQL: each is read from the rows at scrape
// time, so moving a row's timestamps moves the gauge. The exposition is checked by promtool
// (`check metrics`), a parser and linter we did not write.

const t = useTestDb();

/** One series' value from a text exposition, or undefined when the series is absent. */
function sample(text: string, name: string, labels = ""): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(labels ? `${name}{${labels}} ` : `${name} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1));
}

function promtoolCheckMetrics(text: string): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    const child = execFile("/usr/bin/promtool", ["check", "metrics"], (err, stdout, stderr) =>
      resolve({ code: err ? (typeof err.code === "number" ? err.code : -1) : 0, out: stdout + stderr }),
    );
    child.stdin?.end(text);
  });
}

function scrape(): Promise<string> {
  const registry = new Registry();
  registerFleetMetrics(registry, t.db());
  return registry.metrics();
}

describe("fleet metrics from PostgreSQL", () => {
  it("report queue age, depth, occupancy and reservations per pool from the rows", async () => {
    const tenant = await seedTenant(t.db());
    const p = `pool="${tenant.pool}"`;
    await seedFrozenRun(t.db(), tenant, def(ONE_JOB));
    await t.db().$executeRaw`UPDATE job_run SET ready_at = now() - interval '90 seconds' WHERE pool = ${tenant.pool}`;
    let text = await scrape();
    expect(sample(text, "kiln_ready_jobs", p)).toBe(1);
    const age = sample(text, "kiln_oldest_eligible_job_age_seconds", p) ?? -1;
    expect(age).toBeGreaterThanOrEqual(90);
    expect(age).toBeLessThan(120);
    // Held back by its own org's cap: not eligible, so no age (a tenant over its cap has no SLO).
    await t.db().$executeRaw`UPDATE job_run SET wait_reason = 'org_cap' WHERE pool = ${tenant.pool}`;
    text = await scrape();
    expect(sample(text, "kiln_oldest_eligible_job_age_seconds", p)).toBe(0);
    expect(sample(text, "kiln_ready_jobs", p)).toBe(1);
    await t.db().$executeRaw`UPDATE job_run SET wait_reason = NULL WHERE pool = ${tenant.pool}`;

    const session = await newSession(t.db(), tenant);
    const claimed = await claimJob(t.db(), TEST_CFG, { sessionId: session, claimRequestId: randomUUID() });
    expect(claimed.kind).toBe("claimed");
    text = await scrape();
    expect(sample(text, "kiln_ready_jobs", p)).toBe(0);
    expect(sample(text, "kiln_pool_occupancy", p)).toBe(1);
    expect(sample(text, "kiln_pool_reservations", p)).toBe(1);
    // Queued 90 s: the interactive p95 of the last five minutes' claims in this pool.
    expect(sample(text, "kiln_queue_wait_p95_seconds", p)).toBeGreaterThanOrEqual(90);
    expect(sample(text, "kiln_reconciler_lag_seconds")).toBe(0);
    // A lease that expired 40 s ago and that no reconciler fenced: that is the reconciler's lag.
    await t.db()
      .$executeRaw`UPDATE attempt SET lease_expires_at = now() - interval '40 seconds' WHERE pool = ${tenant.pool}`;
    const lag = sample(await scrape(), "kiln_reconciler_lag_seconds") ?? -1;
    expect(lag).toBeGreaterThanOrEqual(40);
    expect(lag).toBeLessThan(70);
  });

  it("count job and attempt outcomes (all six, 0 included) and platform retries from the rows", async () => {
    const before = await scrape();
    const count = (text: string, name: string, o: string) => sample(text, name, `outcome="${o}"`) ?? -1;
    for (const o of OUTCOMES) expect(count(before, "kiln_job_outcomes_total", o)).toBeGreaterThanOrEqual(0);
    const tenant = await seedTenant(t.db());
    const session = await newSession(t.db(), tenant);
    await seedFrozenRun(t.db(), tenant, def(TWO_JOBS));
    const finish = async (outcome: "success" | "platform_failure" | "user_failure") => {
      const c = await claimJob(t.db(), TEST_CFG, { sessionId: session, claimRequestId: randomUUID() });
      if (c.kind !== "claimed") throw new Error(`nothing to claim: ${c.kind}`);
      const { attemptId, jobId, epoch } = c.ticket;
      return completeAttempt(t.db(), TEST_CFG, { attemptId, jobId, epoch, outcome, sandboxDestroyed: true });
    };
    // compile: a platform failure (retried automatically), then success; test: a user failure.
    expect(await finish("platform_failure")).toMatchObject({ accepted: true, jobOutcome: "retry_scheduled" });
    expect(await finish("success")).toMatchObject({ accepted: true, jobOutcome: "success" });
    expect(await finish("user_failure")).toMatchObject({ accepted: true, jobOutcome: "user_failure" });
    const after = await scrape();
    const delta = (name: string, o: string) => count(after, name, o) - count(before, name, o);
    expect(delta("kiln_job_outcomes_total", "success")).toBe(1);
    expect(delta("kiln_job_outcomes_total", "user_failure")).toBe(1);
    expect(delta("kiln_job_outcomes_total", "platform_failure")).toBe(0);
    expect(delta("kiln_attempt_outcomes_total", "platform_failure")).toBe(1);
    expect(delta("kiln_attempt_outcomes_total", "success")).toBe(1);
    expect(
      (sample(after, "kiln_platform_retries_total") ?? 0) - (sample(before, "kiln_platform_retries_total") ?? 0),
    ).toBe(1);
  });

  it("expose text that promtool parses and lints clean, fleet and in-process metrics alike", async () => {
    countFencingRefusal("ATTEMPT.STALE_EPOCH");
    countFencingRefusal("RUN.NOT_FOUND");
    registerFleetMetrics(controlPlaneRegistry, t.db());
    const text = await controlPlaneRegistry.metrics();
    expect(sample(text, "kiln_stale_result_rejections_total", 'code="ATTEMPT.STALE_EPOCH"')).toBe(1);
    // Only fencing refusals count: other domain errors are not stale results.
    expect(text).not.toContain('code="RUN.NOT_FOUND"');
    for (const name of ["kiln_log_archive_lag_seconds", "kiln_tlog_checkpoint_age_seconds", "kiln_shred_leaks"])
      expect(sample(text, name)).toBeGreaterThanOrEqual(0);
    const r = await promtoolCheckMetrics(text);
    expect(r.out).toBe("");
    expect(r.code).toBe(0);
    // The checker is not a rubber stamp: a counter without _total and a bad line are refused.
    const bad = await promtoolCheckMetrics("# TYPE kiln_bad counter\nkiln_bad 1\nnot a sample line\n");
    expect(bad.code).not.toBe(0);
  });
});
