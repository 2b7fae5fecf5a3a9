import { existsSync } from "node:fs";
import { HeadObjectCommand } from "@aws-sdk/client-s3";
import { describe, expect, it } from "vitest";
import { completeAttempt } from "../../src/attempts/complete-attempt.ts";
import { reconcile } from "../../src/attempts/reconcile.ts";
import { collectArtifactGarbage } from "../../src/artifacts/collect-garbage.ts";
import { openUpload } from "../../src/artifacts/open-upload.ts";
import { finalizeUpload } from "../../src/artifacts/finalize-upload.ts";
import { def, newSession, seedFrozenRun, seedTenant, TEST_CFG, useTestDb } from "../support.ts";
import {
  bytes,
  claim,
  claimsOf,
  expireLease,
  MiB,
  PRODUCER_CONSUMER,
  publish,
  sha256,
  uploadParts,
  useS3,
} from "./support.ts";
import type { S3WithAbort } from "@kiln/testkit";

const t = useTestDb();
const s3 = useS3("s3rver+abort");
const server = () => s3.server() as S3WithAbort;

async function gen(id: string) {
  const r = await t.db().$queryRaw<
    {
      state: string;
      object_key: string;
      upload_id: string | null;
      object_deleted_at: Date | null;
      abandon_reason: string | null;
    }[]
  >`
    SELECT state, object_key, upload_id, object_deleted_at, abandon_reason FROM artifact_generation WHERE id = ${id}::uuid`;
  return r[0]!;
}

async function objectExists(key: string): Promise<boolean> {
  try {
    await s3.store().s3.send(new HeadObjectCommand({ Bucket: "kiln", Key: key }));
    return true;
  } catch {
    return false;
  }
}

describe("artifact garbage collection", () => {
  it("aborts a fenced attempt's abandoned multipart upload, leaves live and bound ones alone, and is a no-op twice", async () => {
    const tenant = await seedTenant(t.db());
    const [s1, s2] = [await newSession(t.db(), tenant, 5, "a"), await newSession(t.db(), tenant, 5, "b")];
    await seedFrozenRun(t.db(), tenant, def(PRODUCER_CONSUMER));
    const zombie = (await claim(t.db(), s1))!;
    const data = bytes(11 * MiB, 5);
    const abandoned = await openUpload(t.db(), s3.store(), claimsOf(zombie), {
      name: "app",
      sizeBytes: data.length,
      sha256: sha256(data),
      format: "file",
    });
    await uploadParts(t.db(), zombie, abandoned, data, [1, 2]);
    const abandonedRow = await gen(abandoned.generationId);
    expect(existsSync(server().uploadDir(abandonedRow.upload_id!))).toBe(true);

    // Nothing is garbage while its attempt may still finish.
    expect(await collectArtifactGarbage(t.db(), s3.store())).toMatchObject({ abandoned: 0 });
    await expireLease(t.db(), zombie.attemptId);
    expect((await reconcile(t.db(), TEST_CFG)).fenced).toBe(1);

    const winner = (await claim(t.db(), s2))!;
    const bound = await publish(t.db(), s3.store(), winner, "app", data);
    await completeAttempt(t.db(), TEST_CFG, { ...claimsOf(winner), outcome: "success", sandboxDestroyed: true });
    // The consumer's own (still running) attempt has nothing to collect either.
    const consumer = (await claim(t.db(), s2))!;
    expect(consumer.job.name).toBe("test");

    // A grace period in the future protects everything.
    const patient = { ...s3.store(), settings: { ...s3.store().settings, gcGraceMs: 3600_000 } };
    expect(await collectArtifactGarbage(t.db(), patient)).toMatchObject({ abandoned: 0, abortedUploads: 0 });

    const first = await collectArtifactGarbage(t.db(), s3.store());
    expect(first).toMatchObject({ abandoned: 1, abortedUploads: 1, abortUnsupported: 0 });
    expect(existsSync(server().uploadDir(abandonedRow.upload_id!))).toBe(false);
    expect(await gen(abandoned.generationId)).toMatchObject({ state: "abandoned", abandon_reason: "unbound" });
    const parts = await t.db().$queryRaw<
      { n: bigint }[]
    >`SELECT count(*) AS n FROM artifact_part WHERE generation_id = ${abandoned.generationId}::uuid`;
    expect(parts[0]?.n).toBe(0n);
    // The zombie's presigned URLs now lead nowhere.
    const late = await fetch(abandoned.parts[2]!.url!, {
      method: "PUT",
      body: new Uint8Array(data.subarray(10 * MiB)),
    });
    expect(late.status).toBe(404);

    expect((await gen(bound)).state).toBe("sealed");
    expect(await objectExists((await gen(bound)).object_key)).toBe(true);

    const second = await collectArtifactGarbage(t.db(), s3.store());
    expect(second).toEqual({ abandoned: 0, abortedUploads: 0, deletedObjects: 0, abortUnsupported: 0 });
    const events = await t.db().$queryRaw<{ n: bigint }[]>`
      SELECT count(*) AS n FROM transition_event WHERE entity = 'artifact' AND reason = 'collected' AND data->>'generation_id' = ${abandoned.generationId}`;
    expect(events[0]?.n).toBe(1n);
  });

  it("deletes the object of a sealed generation whose attempt lost, and of one that failed verification", async () => {
    const tenant = await seedTenant(t.db());
    const s = await newSession(t.db(), tenant, 5);
    await seedFrozenRun(t.db(), tenant, def(PRODUCER_CONSUMER));
    const loser = (await claim(t.db(), s))!;
    const data = bytes(2 * MiB, 8);
    const sealed = await publish(t.db(), s3.store(), loser, "app", data);
    const key = (await gen(sealed)).object_key;
    expect(await objectExists(key)).toBe(true);
    // Sealed, then silent: fenced before its completion could bind it.
    await expireLease(t.db(), loser.attemptId);
    expect((await reconcile(t.db(), TEST_CFG)).fenced).toBe(1);
    const r = await collectArtifactGarbage(t.db(), s3.store());
    expect(r.abandoned).toBe(1);
    expect(await objectExists(key)).toBe(false);
    expect(await gen(sealed)).toMatchObject({ state: "abandoned" });
    expect((await gen(sealed)).object_deleted_at).not.toBeNull();

    // A generation abandoned at verification keeps no object either.
    const next = (await claim(t.db(), s))!;
    const session = await openUpload(t.db(), s3.store(), claimsOf(next), {
      name: "app",
      sizeBytes: data.length,
      sha256: "0".repeat(64),
      format: "file",
    });
    await uploadParts(t.db(), next, session, data);
    await expect(finalizeUpload(t.db(), s3.store(), claimsOf(next), session.generationId)).rejects.toMatchObject({
      code: "ARTIFACT.VERIFICATION_FAILED",
    });
    const vkey = (await gen(session.generationId)).object_key;
    expect(await objectExists(vkey)).toBe(true);
    expect((await collectArtifactGarbage(t.db(), s3.store())).deletedObjects).toBe(1);
    expect(await objectExists(vkey)).toBe(false);
    expect(await gen(session.generationId)).toMatchObject({
      state: "abandoned",
      abandon_reason: "verification_failed",
    });
  });
});
