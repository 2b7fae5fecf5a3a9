import { describe, expect, it } from "vitest";
import { createEnvironment, listPromotableArtifacts, requestPromotion } from "../../src/environments/index.ts";
import { useS3 } from "../artifacts/support.ts";
import { useSigner } from "../attestation/support.ts";
import { useJournalPool } from "../logs/support.ts";
import { seedTenant, useTestDb } from "../support.ts";
import { envDeps, member, producedArtifact, type Infra } from "./support.ts";

// The promotion form's artifact picker (issue 29): the environment's repo's recent attested
// artifacts, scoped to the caller's org in the query.

const t = useTestDb();
const s3 = useS3();
const pool = useJournalPool(t.url);
const signer = useSigner();
const x: Infra = { db: t.db, pool, store: s3.store, signer };

async function orgWithEnv(name = "staging") {
  const tenant = await seedTenant(t.db());
  const admin = await member(t.db(), tenant, "admin");
  const env = await createEnvironment(t.db(), admin, { repoId: tenant.repoId, name });
  return { tenant, admin, env };
}

describe("listPromotableArtifacts", () => {
  it("offers the repo's attested artifacts newest first with name, job, commit, digest and age, and what it offers promotes", async () => {
    const { tenant, admin, env } = await orgWithEnv();
    const older = await producedArtifact(x, tenant);
    await producedArtifact(x, tenant, { attest: false });
    const newer = await producedArtifact(x, tenant);
    const list = await listPromotableArtifacts(t.db(), tenant.orgId, env.id);
    expect(list.map((a) => a.artifactId)).toEqual([newer.artifactId, older.artifactId]);
    const [first] = list;
    const run = await t.db().$queryRaw<{ commit_sha: string }[]>`
      SELECT commit_sha FROM workflow_run WHERE id = ${newer.runId}::uuid`;
    const gen = await t.db().$queryRaw<{ sha256: string }[]>`
      SELECT sha256 FROM artifact_generation WHERE id = ${newer.artifactId}::uuid`;
    expect(first).toMatchObject({
      name: "app",
      job: "build",
      runId: newer.runId,
      commitSha: run[0]?.commit_sha,
      digest: gen[0]?.sha256,
      attestation: "logged",
    });
    expect(Date.parse(first?.sealedAt ?? "")).toBeGreaterThan(Date.now() - 5 * 60_000);
    // A choice from the picker is one the provenance gate passes.
    const p = await requestPromotion(t.db(), envDeps(), admin, {
      environmentId: env.id,
      artifact: { artifactId: first?.artifactId ?? "" },
      reason: "picked",
    });
    expect(p.decision.reasons.map((r) => r.code)).toContain("PROVENANCE.OK");
  });

  it("leaves out a quarantined artifact and honours the limit", async () => {
    const { tenant, env } = await orgWithEnv();
    const a = await producedArtifact(x, tenant);
    const b = await producedArtifact(x, tenant);
    const att = await t.db().$queryRaw<{ attestation_id: string }[]>`
      SELECT attestation_id FROM attestation_subject WHERE generation_id = ${b.artifactId}::uuid`;
    await t.db().$executeRaw`
      INSERT INTO artifact_quarantine (generation_id, org_id, run_id, job_id, attestation_id, reason, expected_sha256)
      VALUES (${b.artifactId}::uuid, ${tenant.orgId}::uuid, ${b.runId}::uuid, ${b.jobId}::uuid, ${att[0]?.attestation_id}::uuid,
              'object.digest_mismatch', ${"0".repeat(64)})`;
    expect((await listPromotableArtifacts(t.db(), tenant.orgId, env.id)).map((r) => r.artifactId)).toEqual([
      a.artifactId,
    ]);
    await producedArtifact(x, tenant);
    expect(await listPromotableArtifacts(t.db(), tenant.orgId, env.id, { limit: 1 })).toHaveLength(1);
  });

  it("hostile: another org's environment is not found, and no org ever sees another org's artifacts", async () => {
    const acme = await orgWithEnv();
    const evil = await orgWithEnv("evil-staging");
    const secret = await producedArtifact(x, acme.tenant);
    const own = await producedArtifact(x, evil.tenant);
    // evil names acme's environment with its own org: refused as if it did not exist.
    await expect(listPromotableArtifacts(t.db(), evil.tenant.orgId, acme.env.id)).rejects.toMatchObject({
      code: "ENV.NOT_FOUND",
    });
    await expect(listPromotableArtifacts(t.db(), evil.tenant.orgId, "not-a-uuid")).rejects.toMatchObject({
      code: "ENV.NOT_FOUND",
    });
    // Even an environment row pointed at acme's repo (a corrupt or forged row) lists nothing of acme's:
    // every run, binding and attestation must be the caller's org too.
    await t.db()
      .$executeRaw`UPDATE environment SET repo_id = ${acme.tenant.repoId}::uuid WHERE id = ${evil.env.id}::uuid`;
    expect(await listPromotableArtifacts(t.db(), evil.tenant.orgId, evil.env.id)).toEqual([]);
    await t.db()
      .$executeRaw`UPDATE environment SET repo_id = ${evil.tenant.repoId}::uuid WHERE id = ${evil.env.id}::uuid`;
    const seen = (await listPromotableArtifacts(t.db(), evil.tenant.orgId, evil.env.id)).map((a) => a.artifactId);
    expect(seen).toEqual([own.artifactId]);
    expect(seen).not.toContain(secret.artifactId);
  });
});
