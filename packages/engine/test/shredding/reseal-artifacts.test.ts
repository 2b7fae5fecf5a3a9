// The re-sealer on real PostgreSQL and a real S3 server (issue 21, ADR 0037 "Reseal"): an artifact
// that must outlive its day's data key is moved to a later key before it dies; one nothing needs
// dies with its key. Artifacts are uploaded sealed the way the host agent does it (PartSealStream
// per part to the presigned URLs), then bound by completing the attempt.
import { createHash } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Readable } from "node:stream";
import { isDomainError } from "@kiln/domain";
import { describe, expect, it } from "vitest";
import type { ArtifactStore } from "../../src/artifacts/artifact-context.ts";
import { downloadArtifact } from "../../src/artifacts/download-artifact.ts";
import { readBack } from "../../src/artifacts/store-ops.ts";
import { addRetentionHold } from "../../src/retention/retention-holds.ts";
import { generateKekText, KekSource } from "../../src/secrets/index.ts";
import { dataKeyForRead, destroyDueKeys, PlatformKeyStore, type ShredKeyDeps } from "../../src/shredding/index.ts";
import { resealHeldArtifacts } from "../../src/artifacts/reseal-artifacts.ts";
import { bytes, MiB, sha256, useS3 } from "../artifacts/support.ts";
import { seedTenant, useTestDb, type Tenant } from "../support.ts";
import { sealedShreddedArtifact } from "./support.ts";

const t = useTestDb();
const s3 = useS3();
const dir = mkdtempSync(path.join(tmpdir(), "kiln-reseal-"));
writeFileSync(path.join(dir, "kek"), generateKekText(), { mode: 0o600 });
const deps = (): ShredKeyDeps => ({
  db: t.db(),
  keks: new KekSource(path.join(dir, "kek")),
  platformKeys: new PlatformKeyStore(path.join(dir, "shred-keys")),
});
const store = (): ArtifactStore => ({ ...s3.store(), shred: deps() });
const DAY = 86_400_000;

interface Gen {
  id: string;
  object_key: string;
  shred_key_id: string;
  shred_salt: Uint8Array;
  stored_size_bytes: bigint;
  shred_due_at: Date;
  reseal_count: number;
  xmin: string;
}

const gen = async (id: string): Promise<Gen> => {
  const r = await t.db().$queryRaw<Gen[]>`
    SELECT id::text, object_key, shred_key_id::text, shred_salt, stored_size_bytes, shred_due_at, reseal_count, xmin::text
    FROM artifact_generation WHERE id = ${id}::uuid`;
  if (!r[0]) throw new Error(`no generation ${id}`);
  return r[0];
};

const sealedArtifact = (tenant: Tenant, data: Buffer) => sealedShreddedArtifact(t.db(), store(), tenant, data);

const hold = (orgId: string, id: string) =>
  addRetentionHold(t.db(), { orgId, role: "admin", actor: "token:admin" }, { artifactId: id, reason: "legal" });

async function shaOf(body: Readable): Promise<string> {
  const h = createHash("sha256");
  for await (const c of body as AsyncIterable<Buffer>) h.update(c);
  return h.digest("hex");
}

async function codeOf(p: Promise<unknown>): Promise<string | null> {
  try {
    await p;
    return null;
  } catch (e) {
    return isDomainError(e) ? e.code : String(e);
  }
}

describe("re-sealing artifacts that outlive their key", () => {
  it("moves a held artifact to a later key before its key dies; an unheld one dies with the key", async () => {
    const tenant = await seedTenant(t.db());
    // Two parts (5 MiB chunk-aligned parts), so the copy exercises the multipart layout.
    const data = bytes(6 * MiB + 12_345, 7);
    const held = await sealedArtifact(tenant, data);
    const free = await sealedArtifact(tenant, data);
    await hold(tenant.orgId, held);
    const before = await gen(held);
    const freeBefore = await gen(free);
    expect(before.shred_key_id).toBe(freeBefore.shred_key_id); // one key per org, day, kind, class

    // Far from the due nothing moves; a day before it, the held one does.
    const early = await resealHeldArtifacts(t.db(), store(), { now: new Date() });
    expect(early).toEqual({ resealed: 0, skipped: 0, failed: [] });
    const now = new Date(before.shred_due_at.getTime() - DAY);
    const pass = await resealHeldArtifacts(t.db(), store(), { now });
    expect(pass).toEqual({ resealed: 1, skipped: 0, failed: [] });

    const after = await gen(held);
    expect(after.reseal_count).toBe(1);
    expect(after.shred_key_id).not.toBe(before.shred_key_id);
    expect(after.shred_due_at.getTime()).toBeGreaterThan(before.shred_due_at.getTime() + 2 * DAY);
    expect(after.object_key).not.toBe(before.object_key);
    expect(after.object_key.startsWith(`${before.object_key}.r1-`)).toBe(true);
    expect(Buffer.from(after.shred_salt).equals(Buffer.from(before.shred_salt))).toBe(false);
    expect(await gen(free)).toEqual(freeBefore);

    // The new object opens under the new key to the provenance digest.
    const newKey = await dataKeyForRead(deps(), tenant.orgId, after.shred_key_id, new Date());
    expect(newKey.dueAt).toEqual(after.shred_due_at);
    const readback = await readBack(s3.store(), after.object_key, newKey);
    expect(readback).toEqual({ sizeBytes: data.length, sha256: sha256(data) });

    // The event and the new object's record committed with the row (one transaction: one xmin).
    const ev = await t.db().$queryRaw<
      { from_state: string; to_state: string; reason: string; data: Record<string, unknown>; xmin: string }[]
    >`
      SELECT from_state, to_state, reason, data, xmin::text FROM transition_event
      WHERE entity = 'artifact' AND data->>'generation_id' = ${held} AND reason = 'resealed'`;
    expect(ev).toHaveLength(1);
    expect(ev[0]).toMatchObject({
      from_state: "sealed",
      to_state: "sealed",
      data: { resealed: true, from_key: before.shred_key_id, to_key: after.shred_key_id, reseal_count: 1 },
      xmin: after.xmin,
    });
    const objects = await t.db().$queryRaw<{ key_id: string; due_at: Date; xmin: string }[]>`
      SELECT key_id::text, due_at, xmin::text FROM shred_object WHERE object_key = ${after.object_key}`;
    expect(objects).toEqual([{ key_id: after.shred_key_id, due_at: after.shred_due_at, xmin: after.xmin }]);

    // The old key dies at its due: the held artifact still downloads, the unheld one is gone.
    const destroyed = await destroyDueKeys(deps(), before.shred_due_at);
    expect(destroyed.dataKeys).toBe(1);
    const d = await downloadArtifact(t.db(), store(), { artifactId: held, reader: { orgId: tenant.orgId } });
    if (d.kind !== "stream") throw new Error(`download is ${d.kind}`);
    expect(await shaOf(d.body)).toBe(sha256(data));
    expect(await codeOf(downloadArtifact(t.db(), store(), { artifactId: free, reader: { orgId: tenant.orgId } }))).toBe(
      "SHRED.KEY_DESTROYED",
    );
    // The old object stays, unreadable: the sampler's evidence that its key took it along.
    expect(await codeOf(dataKeyForRead(deps(), tenant.orgId, before.shred_key_id, new Date()))).toBe(
      "SHRED.KEY_DESTROYED",
    );

    // Run-it-twice: the moved artifact's key now dies far past the look-ahead; nothing moves again.
    expect(await resealHeldArtifacts(t.db(), store(), { now })).toEqual({ resealed: 0, skipped: 0, failed: [] });
    expect((await gen(held)).reseal_count).toBe(1);
  });

  it("two passes at once re-seal an artifact once", async () => {
    const tenant = await seedTenant(t.db());
    const data = bytes(300_000, 11);
    const held = await sealedArtifact(tenant, data);
    await hold(tenant.orgId, held);
    const before = await gen(held);
    const now = new Date(before.shred_due_at.getTime() - DAY);
    const [a, b] = await Promise.all([
      resealHeldArtifacts(t.db(), store(), { now }),
      resealHeldArtifacts(t.db(), store(), { now }),
    ]);
    expect(a.resealed + b.resealed).toBe(1);
    expect([...a.failed, ...b.failed]).toEqual([]);
    const after = await gen(held);
    expect(after.reseal_count).toBe(1);
    const events = await t.db().$queryRaw<{ n: bigint }[]>`
      SELECT count(*) AS n FROM transition_event WHERE data->>'generation_id' = ${held} AND reason = 'resealed'`;
    expect(Number(events[0]?.n)).toBe(1);
    const key = await dataKeyForRead(deps(), tenant.orgId, after.shred_key_id, new Date());
    expect(await readBack(s3.store(), after.object_key, key)).toEqual({ sizeBytes: data.length, sha256: sha256(data) });
  });
});
