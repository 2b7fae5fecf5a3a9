import { randomUUID } from "node:crypto";
import { isDomainError } from "@kiln/domain";
import { describe, expect, it } from "vitest";
import { completeAttempt } from "../src/attempts/complete-attempt.ts";
import { claimJob, type JobTicket } from "../src/dispatch/claim-job.ts";
import {
  allowEgressHost,
  listEgressRules,
  listRunEgress,
  recordEgressEvents,
  removeEgressHost,
} from "../src/egress/index.ts";
import { def, newSession, ONE_JOB, seedFrozenRun, seedTenant, TEST_CFG, useTestDb, type Tenant } from "./support.ts";

// Mediated egress in the control plane (issue 3) on real PostgreSQL: the audited allow-list, the
// policy the claim puts in the ticket, and fenced, idempotent event recording.
const t = useTestDb();
const CFG = TEST_CFG;

async function claimRun(tenant: Tenant, trust: "trusted" | "untrusted"): Promise<JobTicket> {
  await seedFrozenRun(t.db(), tenant, def(ONE_JOB), trust);
  // Untrusted work is placed on microVM hosts only (ADR 0022).
  const session = await newSession(t.db(), tenant, 100, "host", trust === "untrusted" ? "microvm" : "process");
  const r = await claimJob(t.db(), CFG, { sessionId: session, claimRequestId: randomUUID() });
  if (r.kind !== "claimed") throw new Error(`no claim: ${JSON.stringify(r)}`);
  return r.ticket;
}

async function codeOf(p: Promise<unknown>): Promise<string | null> {
  try {
    await p;
    return null;
  } catch (e) {
    return isDomainError(e) ? e.code : String(e);
  }
}

const event = (host: string, decision: "allowed" | "denied", reason: string) => ({
  host,
  port: 443,
  decision,
  reason,
  count: 1,
  at: new Date().toISOString(),
});

describe("egress allow-list", () => {
  it("stores canonical patterns once per org, audits every change, refuses bad input", async () => {
    const tenant = await seedTenant(t.db());
    const first = await allowEgressHost(t.db(), {
      orgSlug: tenant.slug,
      pattern: "Registry.NPMjs.org.",
      actor: "cli:alice",
    });
    expect(first).toMatchObject({ created: true, rule: { pattern: "registry.npmjs.org", created_by: "cli:alice" } });
    expect(
      (await allowEgressHost(t.db(), { orgSlug: tenant.slug, pattern: "registry.npmjs.org", actor: "cli:bob" }))
        .created,
    ).toBe(false);
    await allowEgressHost(t.db(), { orgSlug: tenant.slug, pattern: "*.github.com:8443", actor: "cli:alice" });
    expect((await listEgressRules(t.db(), tenant.slug)).map((r) => r.pattern)).toEqual([
      "*.github.com:8443",
      "registry.npmjs.org",
    ]);
    await removeEgressHost(t.db(), { orgSlug: tenant.slug, pattern: "REGISTRY.npmjs.org", actor: "cli:bob" });
    expect((await listEgressRules(t.db(), tenant.slug)).map((r) => r.pattern)).toEqual(["*.github.com:8443"]);
    const audit = await t.db().$queryRaw<{ pattern: string; action: string; actor: string }[]>`
      SELECT pattern, action, actor FROM egress_rule_change WHERE org_id = ${tenant.orgId}::uuid ORDER BY id`;
    expect(audit).toEqual([
      { pattern: "registry.npmjs.org", action: "allow", actor: "cli:alice" },
      { pattern: "*.github.com:8443", action: "allow", actor: "cli:alice" },
      { pattern: "registry.npmjs.org", action: "remove", actor: "cli:bob" },
    ]);
    expect(await codeOf(allowEgressHost(t.db(), { orgSlug: tenant.slug, pattern: "*.com", actor: "x" }))).toBe(
      "REQUEST.INVALID",
    );
    expect(
      await codeOf(removeEgressHost(t.db(), { orgSlug: tenant.slug, pattern: "nothere.example.com", actor: "x" })),
    ).toBe("REQUEST.INVALID");
    expect(await codeOf(allowEgressHost(t.db(), { orgSlug: "no-such-org", pattern: "example.com", actor: "x" }))).toBe(
      "REQUEST.INVALID",
    );
  });
});

describe("egress policy in the ticket", () => {
  it("trusted attempts carry the org's list; untrusted ones nothing; neither any platform host", async () => {
    const tenant = await seedTenant(t.db());
    await allowEgressHost(t.db(), { orgSlug: tenant.slug, pattern: "registry.npmjs.org", actor: "test" });
    const trusted = await claimRun(tenant, "trusted");
    expect(trusted.egress).toEqual({
      trustClass: "trusted",
      allowList: ["registry.npmjs.org"],
    });
    const untrusted = await claimRun(tenant, "untrusted");
    expect(untrusted.egress).toEqual({
      trustClass: "untrusted",
      allowList: [],
    });
  });
});

describe("egress events", () => {
  it("records a batch once (retries are no-ops), lists it per run and org, and refuses a finished epoch", async () => {
    const tenant = await seedTenant(t.db());
    const tk = await claimRun(tenant, "trusted");
    const claims = { attemptId: tk.attemptId, jobId: tk.jobId, epoch: tk.epoch };
    const batch = {
      epoch: tk.epoch,
      batch_seq: 0,
      events: [
        event("registry.npmjs.org", "allowed", "allow_list"),
        event("example.org", "denied", "not_on_allow_list"),
      ],
    };
    expect(await recordEgressEvents(t.db(), claims, batch)).toEqual({ recorded: 2 });
    expect(await recordEgressEvents(t.db(), claims, batch)).toEqual({ recorded: 0 });
    const view = await listRunEgress(t.db(), { orgId: tenant.orgId, runId: tk.runId });
    expect(view.events.map((e) => [e.host, e.decision, e.reason, e.attempt])).toEqual([
      ["registry.npmjs.org", "allowed", "allow_list", 1],
      ["example.org", "denied", "not_on_allow_list", 1],
    ]);
    const stranger = await seedTenant(t.db());
    expect(await codeOf(listRunEgress(t.db(), { orgId: stranger.orgId, runId: tk.runId }))).toBe("RUN.NOT_FOUND");
    // A body naming another epoch than the token's, then the attempt's own epoch after it ended.
    expect(await codeOf(recordEgressEvents(t.db(), claims, { ...batch, epoch: 2, batch_seq: 1 }))).toBe(
      "ATTEMPT.STALE_EPOCH",
    );
    await completeAttempt(t.db(), TEST_CFG, { ...claims, outcome: "success", sandboxDestroyed: true });
    expect(await codeOf(recordEgressEvents(t.db(), claims, { ...batch, batch_seq: 2 }))).toBe("ATTEMPT.STALE_EPOCH");
    const n = await t.db().$queryRaw<
      { n: bigint }[]
    >`SELECT count(*) AS n FROM egress_event WHERE run_id = ${tk.runId}::uuid`;
    expect(n[0]?.n).toBe(2n);
  });
});
