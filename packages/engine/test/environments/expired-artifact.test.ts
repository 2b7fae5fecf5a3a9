import { describe, expect, it } from "vitest";
import { createEnvironment, listPointerMoves, requestPromotion } from "../../src/environments/index.ts";
import { useS3 } from "../artifacts/support.ts";
import { useSigner } from "../attestation/support.ts";
import { useJournalPool } from "../logs/support.ts";
import { seedTenant, useTestDb } from "../support.ts";
import { envDeps, member, producedArtifact, type Infra } from "./support.ts";

// Retention (issue 21) and promotion (issue 18) meet at one row: the pointer must never name bytes
// the retention worker has evicted. The worker locks the generation and re-checks pointers; the
// pointer move share-locks it and re-checks expiry, so whichever commits first wins cleanly.

const t = useTestDb();
const s3 = useS3();
const pool = useJournalPool(t.url);
const signer = useSigner();
const x: Infra = { db: t.db, pool, store: s3.store, signer };
const deps = envDeps();

describe("promoting an artifact whose retention window has passed", () => {
  it("is refused with ARTIFACT.EXPIRED and leaves the environment and the promotion log untouched", async () => {
    const tenant = await seedTenant(t.db());
    const admin = await member(t.db(), tenant, "admin");
    const dev = await member(t.db(), tenant, "member");
    const staging = await createEnvironment(t.db(), admin, { repoId: tenant.repoId, name: "staging" });
    const a = await producedArtifact(x, tenant);
    // What the retention worker's eviction commits (evict-item.ts): the generation marked expired.
    await t.db().$executeRaw`
      UPDATE artifact_generation SET expires_at = now() - interval '1 second', expired_at = now()
      WHERE id = ${a.artifactId}::uuid`;

    await expect(
      requestPromotion(t.db(), deps, dev, {
        environmentId: staging.id,
        artifact: { artifactId: a.artifactId },
        reason: "ship it",
      }),
    ).rejects.toMatchObject({ code: "ARTIFACT.EXPIRED" });

    expect(await listPointerMoves(t.db(), tenant.orgId, staging.id)).toEqual([]);
    const rows = await t.db().$queryRaw<{ n: bigint; seq: bigint }[]>`
      SELECT (SELECT count(*) FROM promotion WHERE environment_id = ${staging.id}::uuid) AS n,
             (SELECT pointer_seq FROM environment WHERE id = ${staging.id}::uuid) AS seq`;
    expect(rows[0]).toEqual({ n: 0n, seq: 0n });
  });
});
