import { describe, expect, it } from "vitest";
import { createEnvironment, getPromotion, requestPromotion, reviewPromotion } from "../../src/environments/index.ts";
import { useS3 } from "../artifacts/support.ts";
import { useSigner } from "../attestation/support.ts";
import { useJournalPool } from "../logs/support.ts";
import { seedTenant, useTestDb } from "../support.ts";
import { envDeps, member, producedArtifact, type Infra } from "./support.ts";

const t = useTestDb();
const s3 = useS3();
const pool = useJournalPool(t.url);
const signer = useSigner();
const x: Infra = { db: t.db, pool, store: s3.store, signer };
const deps = envDeps();

describe("a pending promotion when another one moves the pointer", () => {
  it("is superseded in the move's transaction: approving it later cannot move production back", async () => {
    const tenant = await seedTenant(t.db());
    const admin = await member(t.db(), tenant, "admin");
    const dev = await member(t.db(), tenant, "member");
    const staging = await createEnvironment(t.db(), admin, { repoId: tenant.repoId, name: "staging" });
    const prod = await createEnvironment(t.db(), admin, {
      repoId: tenant.repoId,
      name: "production",
      after: "staging",
    });
    const older = await producedArtifact(x, tenant);
    const newer = await producedArtifact(x, tenant);
    const promote = (environmentId: string, artifactId: string) =>
      requestPromotion(t.db(), deps, dev, { environmentId, artifact: { artifactId }, reason: "ship" });
    await promote(staging.id, older.artifactId);
    await promote(staging.id, newer.artifactId);

    const a = await promote(prod.id, older.artifactId);
    const b = await promote(prod.id, newer.artifactId);
    expect([a.state, b.state]).toEqual(["pending", "pending"]);
    const done = await reviewPromotion(t.db(), deps, admin, { promotionId: b.id, decision: "approve" });
    expect(done.state).toBe("promoted");

    expect((await getPromotion(t.db(), tenant.orgId, a.id)).state).toBe("superseded");
    await expect(
      reviewPromotion(t.db(), deps, admin, { promotionId: a.id, decision: "approve" }),
    ).rejects.toMatchObject({ code: "PROMOTION.NOT_PENDING" });
    const env = await t.db().$queryRaw<{ current_digest: string }[]>`
      SELECT current_digest FROM environment WHERE id = ${prod.id}::uuid`;
    expect(env[0]?.current_digest).toBe(done.artifact.digest);

    const events = await t.db().$queryRaw<{ from_state: string; to_state: string; reason: string }[]>`
      SELECT from_state, to_state, reason FROM transition_event
      WHERE entity = 'promotion' AND data->>'promotionId' = ${a.id}`;
    expect(events).toContainEqual({ from_state: "pending", to_state: "superseded", reason: "pointer_moved" });
    const audit = await t.db().$queryRaw<{ kind: string }[]>`
      SELECT kind FROM audit_event WHERE subject = ${a.id} ORDER BY seq`;
    expect(audit.map((e) => e.kind)).toContain("promotion.superseded");
  });
});
