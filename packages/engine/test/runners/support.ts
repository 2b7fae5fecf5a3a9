import { randomUUID } from "node:crypto";
import type { Db } from "@kiln/db";
import { AGENT_PROTOCOL_VERSION } from "@kiln/domain";
import { claimJob } from "../../src/dispatch/claim-job.ts";
import { registerSession } from "../../src/dispatch/register-session.ts";
import { createOrgPool, createRegistrationToken, registerRunner } from "../../src/runners/index.ts";
import { def, seedFrozenRun, seedTenant, TEST_CFG, type Tenant } from "../support.ts";

/** A tenant with an org pool `<slug>/gpu` (process hosts). */
export async function orgWithPool(db: Db): Promise<Tenant & { orgPool: string }> {
  const tenant = await seedTenant(db);
  const p = await createOrgPool(db, { orgId: tenant.orgId, name: "gpu", isolation: "process", actor: "test:admin" });
  return { ...tenant, orgPool: p.name };
}

/** Registers a host in the org's pool (`gpu` unless named) through a fresh single-use token. */
export async function registeredHost(
  db: Db,
  t: Tenant & { orgPool: string },
  labels: string[] = ["gpu"],
  pool = "gpu",
) {
  const tok = await createRegistrationToken(db, { orgId: t.orgId, pool, actor: "test:admin" });
  const reg = await registerRunner(db, {
    token: tok.token,
    pool,
    name: `host-${randomUUID().slice(0, 6)}`,
    labels,
    isolation: "process",
    protocolVersion: AGENT_PROTOCOL_VERSION,
  });
  const agent = await db.$queryRaw<{ agent_token_id: string }[]>`
    SELECT agent_token_id FROM runner WHERE id = ${reg.runnerId}::uuid`;
  const s = await registerSession(db, TEST_CFG, {
    agentTokenId: agent[0]?.agent_token_id ?? "",
    pool: reg.pool,
    body: {
      hostname: reg.name,
      capacity: 4,
      labels: { os: "linux", arch: "x64", resource_class: "small", isolation: "process" },
      runner_labels: labels,
      protocol_version: AGENT_PROTOCOL_VERSION,
      agent_version: "test-agent/1",
    },
  });
  return { ...reg, sessionId: s.sessionId };
}

const labelledJob = (pool: string) =>
  def(`version: 1\njobs:\n  - name: train\n    runs_on: {pool: ${pool}, labels: [gpu]}\n    steps: [echo hi]\n`);

export async function runOnPool(db: Db, t: Tenant & { orgPool: string }): Promise<string> {
  return seedFrozenRun(db, t, labelledJob(t.orgPool));
}

export async function claim(db: Db, sessionId: string) {
  const r = await claimJob(db, TEST_CFG, { sessionId, claimRequestId: randomUUID() });
  return r.kind === "claimed" ? r.ticket : null;
}

export async function runnerRow(db: Db, id: string) {
  const rows = await db.$queryRaw<
    { state: string; quarantine_kind: string | null; quarantine_reason: string | null; quarantined_by: string | null }[]
  >`SELECT state, quarantine_kind, quarantine_reason, quarantined_by FROM runner WHERE id = ${id}::uuid`;
  return rows[0];
}
