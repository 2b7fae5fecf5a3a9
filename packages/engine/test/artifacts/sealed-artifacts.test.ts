import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { buffer as collect } from "node:stream/consumers";
import { pipeline } from "node:stream/promises";
import { randomUUID } from "node:crypto";
import { GetObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { isDomainError, sealedParts, shredDueAt } from "@kiln/domain";
import { describe, expect, it } from "vitest";
import { completeAttempt } from "../../src/attempts/complete-attempt.ts";
import type { ArtifactStore } from "../../src/artifacts/artifact-context.ts";
import { artifactProbes } from "../../src/artifacts/artifact-probes.ts";
import { downloadArtifact } from "../../src/artifacts/download-artifact.ts";
import { finalizeUpload } from "../../src/artifacts/finalize-upload.ts";
import { grantDownload } from "../../src/artifacts/grant-download.ts";
import { openUpload, type UploadSession } from "../../src/artifacts/open-upload.ts";
import { recordPart } from "../../src/artifacts/record-part.ts";
import { generateKekText, KekSource } from "../../src/secrets/index.ts";
import { headerFor, OpenStream, PartSealStream } from "@kiln/chunk-cipher";
import {
  destroyDueKeys,
  logProbes,
  openBuffer,
  PlatformKeyStore,
  s3ObjectGetter,
  sampleDeletions,
  type ShredKeyDeps,
} from "../../src/shredding/index.ts";
import { s3LogStore } from "../../src/logs/index.ts";
import type { SqlPool } from "../../src/shared/sql-pool.ts";
import { useJournalPool } from "../logs/support.ts";
import type { JobTicket } from "../../src/dispatch/claim-job.ts";
import { def, newSession, seedFrozenRun, seedTenant, TEST_CFG, useTestDb } from "../support.ts";
import {
  bytes,
  claim,
  claimsOf,
  fetchBytes,
  md5Of,
  MiB,
  PRODUCER_CONSUMER,
  putPart,
  sha256,
  useS3,
} from "./support.ts";

// Artifacts sealed by the host agent (issue 21, docs/adr/0037 "Artifacts") on real PostgreSQL and
// a real S3 server: the control plane hands the agent a data key and salt, the agent seals each
// part as it PUTs it (done here exactly as apps/host-agent does, with the same cipher module), the
// store holds only ciphertext, the consumer and the API open it, and once the key is destroyed
// nothing serves it.
const t = useTestDb();
const s3 = useS3();
const pool = useJournalPool(t.url);
const dir = mkdtempSync(path.join(tmpdir(), "kiln-art-shred-"));
writeFileSync(path.join(dir, "kek"), generateKekText(), { mode: 0o600 });
const keys = (): ShredKeyDeps => ({
  db: t.db(),
  keks: new KekSource(path.join(dir, "kek")),
  platformKeys: new PlatformKeyStore(path.join(dir, "shred-keys")),
});
const sealing = (): ArtifactStore => ({ ...s3.store(), shred: keys() });

async function codeOf(p: Promise<unknown>): Promise<string | null> {
  try {
    await p;
    return null;
  } catch (e) {
    return isDomainError(e) ? e.code : String(e);
  }
}

/** One part sealed the agent's way: its plaintext range through PartSealStream, nothing on disk. */
async function sealPart(s: UploadSession, data: Buffer, partNumber: number): Promise<Buffer> {
  const seal = s.seal;
  if (!seal) throw new Error("the session is not sealed");
  const layout = sealedParts(data.length, { partSize: s.partSize, partCount: s.partCount }, seal.chunkSize)[
    partNumber - 1
  ];
  if (!layout) throw new Error(`no part ${partNumber}`);
  const header = headerFor(seal.keyId, seal.chunkSize, seal.salt);
  const out = new PartSealStream(seal.key, header, layout);
  const [sealed] = await Promise.all([
    collect(out),
    pipeline(Readable.from([data.subarray(layout.plainOffset, layout.plainOffset + layout.plainSize)]), out),
  ]);
  expect(sealed.length).toBe(layout.sealedSize);
  return sealed;
}

async function publishSealed(
  tk: JobTicket,
  name: string,
  data: Buffer,
  opts: { md5?: boolean; tamper?: boolean } = {},
): Promise<{ session: UploadSession; generationId: string | null; code: string | null }> {
  const session = await openUpload(t.db(), sealing(), claimsOf(tk), {
    name,
    sizeBytes: data.length,
    sha256: sha256(data),
    format: "file",
    seal: true,
  });
  for (const p of session.parts) {
    const body = await sealPart(session, data, p.partNumber);
    if (opts.tamper && p.partNumber === session.partCount) body.writeUInt8((body.at(-100) ?? 0) ^ 1, body.length - 100);
    const etag = await putPart(p.url as string, body);
    await recordPart(t.db(), claimsOf(tk), session.generationId, {
      partNumber: p.partNumber,
      sizeBytes: body.length,
      sha256: sha256(body),
      etag,
      md5: opts.md5 ? md5Of(body) : null,
      tries: 1,
    });
  }
  try {
    const sealed = await finalizeUpload(t.db(), sealing(), claimsOf(tk), session.generationId);
    return { session, generationId: sealed.generationId, code: null };
  } catch (e) {
    return { session, generationId: null, code: isDomainError(e) ? e.code : String(e) };
  }
}

async function objectKeyOf(generationId: string): Promise<string> {
  const [g] = await t.db().$queryRaw<{ object_key: string }[]>`
    SELECT object_key FROM artifact_generation WHERE id = ${generationId}::uuid`;
  return g?.object_key as string;
}

async function rawObject(generationId: string): Promise<Buffer> {
  const [g] = await t.db().$queryRaw<{ object_key: string }[]>`
    SELECT object_key FROM artifact_generation WHERE id = ${generationId}::uuid`;
  const r = await s3.store().s3.send(new GetObjectCommand({ Bucket: s3.store().bucket, Key: g?.object_key }));
  return Buffer.from((await r.Body?.transformToByteArray()) ?? []);
}

const opened = async (sealedBytes: Buffer, key: { id: string; key: Buffer }): Promise<Buffer> => {
  const open = new OpenStream((id) => {
    if (id !== key.id) throw new Error(`sealed under ${id}`);
    return key;
  });
  const [plain] = await Promise.all([collect(open), pipeline(Readable.from([sealedBytes]), open)]);
  return plain;
};

const done = (tk: JobTicket) =>
  completeAttempt(t.db(), TEST_CFG, {
    attemptId: tk.attemptId,
    jobId: tk.jobId,
    epoch: tk.epoch,
    outcome: "success",
    sandboxDestroyed: true,
  });

describe("artifacts sealed by the host agent", () => {
  it("stores ciphertext only, restores and downloads the plaintext, and serves nothing once the key dies", async () => {
    const tenant = await seedTenant(t.db());
    const s = await newSession(t.db(), tenant);
    await seedFrozenRun(t.db(), tenant, def(PRODUCER_CONSUMER));
    const producer = (await claim(t.db(), s)) as JobTicket;
    // Marked plaintext over more than one 5 MiB part: the parts' chunk ranges meet at a boundary.
    const marker = Buffer.from("sealed-artifact-private-bytes ");
    const data = Buffer.concat([Buffer.concat(Array.from({ length: 40_000 }, () => marker)), bytes(7 * MiB, 3)]);
    const r = await publishSealed(producer, "app", data);
    expect(r.code).toBeNull();
    expect(r.session.partCount).toBeGreaterThan(1);
    expect(r.session.parts.every((p) => typeof p.sealedSize === "number" && p.sealedSize > p.size)).toBe(true);
    const genId = r.generationId as string;
    const [g] = await t.db().$queryRaw<
      {
        shred_key_id: string;
        stored_size_bytes: bigint;
        shred_due_at: Date;
        size_bytes: bigint;
        expires_at: Date;
        due_day: Date;
      }[]
    >`SELECT g.shred_key_id::text, g.stored_size_bytes, g.shred_due_at, g.size_bytes, g.expires_at, k.due_day
      FROM artifact_generation g JOIN shred_data_key k ON k.id = g.shred_key_id WHERE g.id = ${genId}::uuid`;
    expect(g?.shred_key_id).toBe(r.session.seal?.keyId);
    expect(Number(g?.size_bytes)).toBe(data.length);
    // The generation's due instant is its key's: both come from the one day and class.
    expect(g?.shred_due_at.toISOString()).toBe(
      shredDueAt((g?.due_day as Date).toISOString().slice(0, 10)).toISOString(),
    );
    // The deletion sampler knows the object (recorded in the seal's transaction).
    const recorded = await t.db().$queryRaw<{ n: bigint }[]>`
      SELECT count(*) AS n FROM shred_object WHERE subject_id = ${genId}::uuid AND kind = 'artifact' AND key_id = ${g?.shred_key_id}::uuid`;
    expect(Number(recorded[0]?.n)).toBe(1);

    // What the store holds: the header, then sealed chunks; none of the plaintext.
    const stored = await rawObject(genId);
    expect(stored.length).toBe(Number(g?.stored_size_bytes));
    expect(stored.subarray(0, 4).toString()).toBe("KLNS");
    expect(stored.includes(marker)).toBe(false);
    const key = { id: r.session.seal?.keyId as string, key: Buffer.from(r.session.seal?.key as Buffer) };
    expect(sha256(openBuffer(key, stored))).toBe(sha256(data));

    await done(producer);
    // The consumer's agent gets the URL and the key to open it with, and opens it to the bound digest.
    const consumer = (await claim(t.db(), s)) as JobTicket;
    const grant = await grantDownload(t.db(), sealing(), claimsOf(consumer), { fromJob: "compile", name: "app" });
    expect(grant).toMatchObject({ generationId: genId, sizeBytes: data.length, sha256: sha256(data) });
    expect(grant.seal).toMatchObject({ keyId: key.id, storedSizeBytes: stored.length });
    const fetched = await fetchBytes(grant.url);
    expect(fetched.includes(marker)).toBe(false);
    expect(sha256(await opened(fetched, { id: key.id, key: grant.seal?.key as Buffer }))).toBe(sha256(data));
    // A process without the key store cannot serve it and says why, instead of handing out ciphertext.
    expect(
      await codeOf(grantDownload(t.db(), s3.store(), claimsOf(consumer), { fromJob: "compile", name: "app" })),
    ).toBe("SHRED.KEY_UNAVAILABLE");

    // The API streams the opened bytes (a presigned URL would have to hand out the day's key).
    const api = await downloadArtifact(t.db(), sealing(), { artifactId: genId, reader: { orgId: tenant.orgId } });
    expect(api.kind).toBe("stream");
    if (api.kind !== "stream") throw new Error("unreachable");
    expect([api.sizeBytes, api.sha256]).toEqual([data.length, sha256(data)]);
    expect(sha256(await collect(api.body))).toBe(sha256(data));
    // Another org's token finds nothing (matched in the query, before any key is touched).
    const other = await seedTenant(t.db());
    expect(
      await codeOf(downloadArtifact(t.db(), sealing(), { artifactId: genId, reader: { orgId: other.orgId } })),
    ).toBe("ARTIFACT.NOT_FOUND");

    // The due instant: the destroyer removes the day's key. Restore and API download are refused
    // with a clean code, and the stored bytes open under nothing that remains.
    expect((await destroyDueKeys(keys(), g?.shred_due_at as Date)).dataKeys).toBeGreaterThan(0);
    expect(
      await codeOf(grantDownload(t.db(), sealing(), claimsOf(consumer), { fromJob: "compile", name: "app" })),
    ).toBe("SHRED.KEY_DESTROYED");
    expect(
      await codeOf(downloadArtifact(t.db(), sealing(), { artifactId: genId, reader: { orgId: tenant.orgId } })),
    ).toBe("SHRED.KEY_DESTROYED");
    const rows = await t.db().$queryRaw<{ n: bigint }[]>`
      SELECT count(*) AS n FROM shred_data_key WHERE id = ${key.id}::uuid`;
    expect(Number(rows[0]?.n)).toBe(0);

    // The deletion sampler tries the raw GET and the API download on the artifact: both unreadable.
    const due = g?.shred_due_at as Date;
    const sample = () =>
      sampleDeletions(
        {
          db: t.db(),
          probes: [
            ...logProbes({
              keys: keys(),
              pool: pool() as unknown as SqlPool,
              store: s3LogStore(s3.store().s3, s3.store().bucket),
              getObject: s3ObjectGetter(s3.store().s3, s3.store().bucket),
              clock: () => due,
            }),
            ...artifactProbes({ db: t.db(), store: sealing() }),
          ],
        },
        { roundId: randomUUID(), now: due, limit: 500 },
      );
    const objectKey = await objectKeyOf(genId);
    // The latest outcome of each path on this object.
    const latest = async () =>
      (
        await t.db().$queryRaw<{ path: string; outcome: string }[]>`
          SELECT DISTINCT ON (path) path, outcome FROM shred_sample WHERE object_key = ${objectKey}
          ORDER BY path, seq DESC`
      ).map((x) => [x.path, x.outcome]);
    expect((await sample()).leaks).toBe(0);
    expect(await latest()).toEqual([
      ["api_download", "unreadable"],
      ["object_get", "unreadable"],
    ]);
    // A plaintext copy left at the object's key: the raw GET reads it, and that is a leak.
    await s3.store().s3.send(new PutObjectCommand({ Bucket: s3.store().bucket, Key: objectKey, Body: data }));
    expect((await sample()).leaks).toBe(1);
    // The API download still refuses: the generation's key is gone, whatever the store now holds.
    expect(await latest()).toEqual([
      ["api_download", "unreadable"],
      ["object_get", "leak"],
    ]);
  });

  it("seals on the store's ETag when the agent reports sealed part MD5s, and never seals bytes that do not open", async () => {
    const tenant = await seedTenant(t.db());
    const s = await newSession(t.db(), tenant);
    await seedFrozenRun(t.db(), tenant, def(PRODUCER_CONSUMER));
    const producer = (await claim(t.db(), s)) as JobTicket;
    const data = bytes(6 * MiB + 17, 9);
    const ok = await publishSealed(producer, "app", data, { md5: true });
    expect(ok.code).toBeNull();
    expect(
      sha256(
        await opened(await rawObject(ok.generationId as string), {
          id: ok.session.seal?.keyId as string,
          key: ok.session.seal?.key as Buffer,
        }),
      ),
    ).toBe(sha256(data));

    // One flipped ciphertext byte, MD5s not reported: the read-back opens the object, a chunk fails
    // authentication, and the generation is not sealed.
    const tenant2 = await seedTenant(t.db());
    const s2 = await newSession(t.db(), tenant2);
    await seedFrozenRun(t.db(), tenant2, def(PRODUCER_CONSUMER));
    const p2 = (await claim(t.db(), s2)) as JobTicket;
    const bad = await publishSealed(p2, "app", data, { tamper: true });
    expect(bad.code).toBe("ARTIFACT.VERIFICATION_FAILED");
    const [st] = await t.db().$queryRaw<{ state: string }[]>`
      SELECT state FROM artifact_generation WHERE id = ${bad.session.generationId}::uuid`;
    expect(st?.state).not.toBe("sealed");
  });

  it("keeps uploading plaintext for an agent that does not seal, and seals nothing when shredding is off", async () => {
    const tenant = await seedTenant(t.db());
    const s = await newSession(t.db(), tenant);
    await seedFrozenRun(t.db(), tenant, def(PRODUCER_CONSUMER));
    const producer = (await claim(t.db(), s)) as JobTicket;
    const data = bytes(1 * MiB, 4);
    const off = await openUpload(t.db(), s3.store(), claimsOf(producer), {
      name: "app",
      sizeBytes: data.length,
      sha256: sha256(data),
      format: "file",
      seal: true,
    });
    expect(off.seal).toBeNull();
    expect(off.parts.every((p) => p.sealedSize === undefined)).toBe(true);
  });
});
