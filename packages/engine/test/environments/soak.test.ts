import { describe, expect, it } from "vitest";
import {
  createEnvironment,
  getPromotion,
  redecideSoakingPromotions,
  requestPromotion,
  setEnvironmentPolicy,
} from "../../src/environments/index.ts";
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

const auditCount = async (subject: string) =>
  (await t.db().$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM audit_event WHERE subject = ${subject}`)[0]?.n;

describe("a promotion waiting only for the previous environment's soak", () => {
  it("is decided again by the workers' pass once the soak has passed; the pass is a no-op before and after", async () => {
    const tenant = await seedTenant(t.db());
    const admin = await member(t.db(), tenant, "admin");
    const dev = await member(t.db(), tenant, "member");
    const staging = await createEnvironment(t.db(), admin, { repoId: tenant.repoId, name: "staging" });
    const qa = await createEnvironment(t.db(), admin, { repoId: tenant.repoId, name: "qa", after: "staging" });
    await setEnvironmentPolicy(t.db(), admin, {
      environmentId: qa.id,
      policy: { gates: { required_outcomes: {}, provenance: {}, previous_environment: { soak_seconds: 2 } } },
    });
    const a = await producedArtifact(x, tenant);
    const ask = (environmentId: string) =>
      requestPromotion(t.db(), deps, dev, { environmentId, artifact: { artifactId: a.artifactId }, reason: "ship" });
    await ask(staging.id);
    const p = await ask(qa.id);
    expect(p.state).toBe("pending");
    expect(p.decision.reasons.map((r) => r.code)).toContain("PREVIOUS.SOAKING");

    // Still soaking: checked, nothing recorded (no audit noise every minute).
    const before = await auditCount(p.id);
    expect(await redecideSoakingPromotions(t.db(), deps)).toEqual({ checked: 1, decided: 0, promoted: 0 });
    expect(await auditCount(p.id)).toBe(before);
    expect((await getPromotion(t.db(), tenant.orgId, p.id)).state).toBe("pending");

    await new Promise((r) => setTimeout(r, 2_100));
    expect(await redecideSoakingPromotions(t.db(), deps)).toEqual({ checked: 1, decided: 1, promoted: 1 });
    const done = await getPromotion(t.db(), tenant.orgId, p.id);
    expect(done.state).toBe("promoted");
    expect(done.decision.reasons.map((r) => r.code)).toContain("PREVIOUS.OK");
    const env = await t.db().$queryRaw<{ current_digest: string }[]>`
      SELECT current_digest FROM environment WHERE id = ${qa.id}::uuid`;
    expect(env[0]?.current_digest).toBe(done.artifact.digest);

    // Run it twice: nothing is left to decide.
    expect(await redecideSoakingPromotions(t.db(), deps)).toEqual({ checked: 0, decided: 0, promoted: 0 });
  });
});
