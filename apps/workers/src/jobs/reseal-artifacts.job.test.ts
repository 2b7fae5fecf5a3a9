import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { addRetentionHold, generateKekText, KekSource, PlatformKeyStore, type ArtifactStore } from "@kiln/engine";
import { bytes, sealedShreddedArtifact, seedTenant, useS3, useTestDb } from "@kiln/engine/testing";
import { describe, expect, it } from "vitest";
import { runReseal } from "./reseal-artifacts.job.ts";

// Run-it-twice (conventions rule 9) for the re-sealer (ADR 0037 "Reseal"): the second pass finds the
// moved artifact's key due past the look-ahead and changes nothing.
const t = useTestDb();
const s3 = useS3();
const dir = mkdtempSync(path.join(tmpdir(), "kiln-reseal-job-"));
writeFileSync(path.join(dir, "kek"), generateKekText(), { mode: 0o600 });
const store = (): ArtifactStore => ({
  ...s3.store(),
  shred: {
    db: t.db(),
    keks: new KekSource(path.join(dir, "kek")),
    platformKeys: new PlatformKeyStore(path.join(dir, "keys")),
  },
});

describe("reseal-artifacts job", () => {
  it("re-seals a held artifact once, however often it runs", async () => {
    const tenant = await seedTenant(t.db());
    const id = await sealedShreddedArtifact(t.db(), store(), tenant, bytes(200_000, 3));
    await addRetentionHold(
      t.db(),
      { orgId: tenant.orgId, role: "admin", actor: "token:admin" },
      { artifactId: id, reason: "keep" },
    );
    const [g] = await t.db().$queryRaw<{ shred_due_at: Date }[]>`
      SELECT shred_due_at FROM artifact_generation WHERE id = ${id}::uuid`;
    const now = new Date((g?.shred_due_at as Date).getTime() - 86_400_000);
    const lookahead = 48 * 3_600_000;
    expect(await runReseal(t.db(), store(), now, lookahead)).toEqual({ resealed: 1, skipped: 0, failed: [] });
    const row = () =>
      t.db().$queryRaw<{ object_key: string; shred_key_id: string; reseal_count: number }[]>`
        SELECT object_key, shred_key_id::text, reseal_count FROM artifact_generation WHERE id = ${id}::uuid`;
    const first = await row();
    expect(first[0]?.reseal_count).toBe(1);
    expect(await runReseal(t.db(), store(), now, lookahead)).toEqual({ resealed: 0, skipped: 0, failed: [] });
    expect(await row()).toEqual(first);
  });
});
