import { readProvenanceTrust, type StatementV1 } from "@kiln/domain";
import { describe, expect, it } from "vitest";
import { attestJob } from "../../src/attestation/attest-job.ts";
import { completeAttempt } from "../../src/attempts/complete-attempt.ts";
import { setPoolPolicy } from "../../src/dispatch/pool-policy.ts";
import { createEnvironment, requestPromotion } from "../../src/environments/index.ts";
import { claim, claimsOf, publish, useS3 } from "../artifacts/support.ts";
import { envDeps, member } from "../environments/support.ts";
import { useJournalPool } from "../logs/support.ts";
import { orgWithPool, registeredHost } from "../runners/support.ts";
import { def, newSession, seedFrozenRun, seedTenant, TEST_CFG, useTestDb, type Tenant } from "../support.ts";
import { attestorDeps, useSigner } from "./support.ts";

// Issue 28, from the attacker's side: builder.id comes from operator-controlled records (a platform
// pool's host versus an org's registered runner), never from the isolation an agent reports; a fork's
// build is its own builder; production takes neither.
const t = useTestDb();
const s3 = useS3();
const pool = useJournalPool(t.url);
const signer = useSigner();

const build = (poolName?: string) =>
  def(`version: 1
jobs:
  - name: build
${poolName ? `    runs_on: {pool: ${poolName}}\n` : ""}    steps: [make]
    artifacts:
      publish:
        - name: app
          path: app.bin
`);

/** One job of `tenant` claimed by `sessionId`, published, succeeded, attested: its statement. */
async function attested(tenant: Tenant, sessionId: string, trust: string, poolName?: string) {
  const runId = await seedFrozenRun(t.db(), tenant, build(poolName), trust);
  const p = await claim(t.db(), sessionId);
  if (!p) throw new Error("nothing claimed");
  const artifactId = await publish(t.db(), s3.store(), p, "app", Buffer.from(`app ${runId}`));
  await completeAttempt(t.db(), TEST_CFG, { ...claimsOf(p), outcome: "success", sandboxDestroyed: true });
  const r = await attestJob(attestorDeps(t.db(), pool(), s3.store(), signer()), { jobId: p.jobId, epoch: p.epoch });
  if (r.kind !== "attested") throw new Error(`attestation: ${r.kind}`);
  const [row] = await t.db().$queryRaw<{ envelope: string }[]>`
    SELECT envelope FROM attestation WHERE id = ${r.attestationId}::uuid`;
  const env = JSON.parse(row!.envelope) as { payload: string };
  const statement = JSON.parse(Buffer.from(env.payload, "base64").toString("utf8")) as StatementV1;
  return { statement, artifact: { artifactId }, trust: readProvenanceTrust(statement) };
}

async function productionDecision(tenant: Tenant, artifact: { artifactId: string }) {
  const admin = await member(t.db(), tenant, "admin");
  const dev = await member(t.db(), tenant, "member");
  const env = await createEnvironment(t.db(), admin, { repoId: tenant.repoId, name: "production" });
  const p = await requestPromotion(t.db(), envDeps(), dev, { environmentId: env.id, artifact, reason: "ship" });
  return { state: p.state, provenance: p.decision.reasons.find((r) => r.gate === "provenance") };
}

describe("builder identity (issue 28)", () => {
  it("an org's self-hosted runner that reports microvm is the self-hosted builder, and production refuses it", async () => {
    const tenant = await orgWithPool(t.db());
    const host = await registeredHost(t.db(), tenant);
    // The org's agent lies about its isolation at every step it can.
    await t.db().$executeRaw`UPDATE agent_session SET labels = labels || '{"isolation":"microvm"}'::jsonb
      WHERE id = ${host.sessionId}::uuid`;
    await t.db().$executeRaw`UPDATE runner SET isolation = 'microvm' WHERE id = ${host.runnerId}::uuid`;
    const a = await attested(tenant, host.sessionId, "trusted", tenant.orgPool);
    expect(a.trust).toMatchObject({
      builderId: "https://kiln.test/builders/self-hosted",
      builder: "self-hosted",
      trustClass: "trusted",
    });
    const internal = (a.statement.predicate as { buildDefinition: { internalParameters: Record<string, unknown> } })
      .buildDefinition.internalParameters;
    expect(internal).toMatchObject({ isolation: "microvm", host: "self-hosted" });
    const d = await productionDecision(tenant, a.artifact);
    expect(d.state).toBe("denied");
    expect(d.provenance).toMatchObject({ status: "fail", code: "PROVENANCE.NOT_PLATFORM_BUILDER" });
  });

  it("a runner an org registered into a platform pool dedicated to it is self-hosted too", async () => {
    const tenant = await seedTenant(t.db());
    const name = `dedicated-${tenant.slug}`;
    await setPoolPolicy(t.db(), { name, minIsolation: "process", ownerOrg: tenant.slug, actor: "op" });
    const host = await registeredHost(t.db(), { ...tenant, orgPool: name }, [], name);
    const a = await attested(tenant, host.sessionId, "trusted", name);
    expect(a.trust.builderId).toBe("https://kiln.test/builders/self-hosted");
  });

  it("a platform host cannot raise its class by reporting microvm: the pool's declared minimum bounds it", async () => {
    const tenant = await seedTenant(t.db()); // its pool: process minimum (a development pool)
    const s = await newSession(t.db(), tenant, 10, "host", "microvm");
    const a = await attested(tenant, s, "trusted");
    expect(a.trust).toMatchObject({ builderId: "https://kiln.test/builders/process", builder: "platform" });
    // An operator's microVM pool: the platform microVM builder, and production's provenance gate passes.
    const vm = await seedTenant(t.db());
    await setPoolPolicy(t.db(), { name: vm.pool, minIsolation: "microvm", development: true, actor: "op" });
    const sv = await newSession(t.db(), vm, 10, "vm-host", "microvm");
    const b = await attested(vm, sv, "trusted");
    expect(b.trust).toMatchObject({ builderId: "https://kiln.test/builders/microvm", trustClass: "trusted" });
    const d = await productionDecision(vm, b.artifact);
    expect(d.provenance).toMatchObject({ status: "pass", code: "PROVENANCE.OK" });
  });

  it("a fork's (untrusted) build is its own builder and build type, and production refuses it", async () => {
    const tenant = await seedTenant(t.db());
    const s = await newSession(t.db(), tenant, 10, "host", "microvm");
    const a = await attested(tenant, s, "untrusted");
    expect(a.trust).toMatchObject({
      builderId: "https://kiln.test/builders/untrusted/process",
      builder: "untrusted",
      buildType: "https://kiln.dev/attestation/buildtypes/untrusted-workflow/v1",
      trustClass: "untrusted",
    });
    const d = await productionDecision(tenant, a.artifact);
    expect(d.state).toBe("denied");
    expect(d.provenance).toMatchObject({ status: "fail", code: "PROVENANCE.UNTRUSTED_RUN" });
  });
});
