// Artifact test support: a real s3rver, an ArtifactStore on it, and the agent's side of the byte
// path done with plain fetch against the presigned URLs (packages must not import the host agent).
import { createHash, randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { startS3, startS3WithAbort, type S3Handle, type S3WithAbort } from "@kiln/testkit";
import { afterAll, beforeAll } from "vitest";
import type { Db } from "@kiln/db";
import {
  DEFAULT_ARTIFACT_SETTINGS,
  type ArtifactStore,
  type ArtifactSettings,
} from "../../src/artifacts/artifact-context.ts";
import { createObjectStore } from "../../src/storage/object-store.ts";
import { applyBucketLifecycle } from "../../src/retention/bucket-lifecycle.ts";
import { openUpload, type UploadSession } from "../../src/artifacts/open-upload.ts";
import { recordPart } from "../../src/artifacts/record-part.ts";
import { finalizeUpload } from "../../src/artifacts/finalize-upload.ts";
import { claimJob, type JobTicket } from "../../src/dispatch/claim-job.ts";
import { TEST_CFG } from "../support.ts";

export const MiB = 1024 * 1024;
/** 5 MiB parts (S3's minimum) keep multi-part artifacts small enough for CI. */
export const TEST_SETTINGS: ArtifactSettings = { ...DEFAULT_ARTIFACT_SETTINGS, partSizeBytes: 5 * MiB, gcGraceMs: 0 };

export function useS3(kind: "s3rver" | "s3rver+abort" = "s3rver"): {
  store: () => ArtifactStore;
  server: () => S3Handle | S3WithAbort;
} {
  let handle: S3Handle | S3WithAbort | null = null;
  let store: ArtifactStore | null = null;
  let dir = "";
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), "kiln-s3-"));
    handle =
      kind === "s3rver"
        ? await startS3({ dataDir: dir, bucket: "kiln" })
        : await startS3WithAbort({ dataDir: dir, bucket: "kiln" });
    store = {
      s3: createObjectStore({
        endpoint: handle.endpoint,
        region: handle.region,
        accessKeyId: handle.accessKeyId,
        secretAccessKey: handle.secretAccessKey,
      }),
      bucket: "kiln",
      settings: TEST_SETTINGS,
    };
    // As `npm run up` does (docs/adr/0036); s3rver answers "unsupported" (retention tests assert it).
    await applyBucketLifecycle(store.s3, store.bucket);
  });
  afterAll(async () => {
    store?.s3.destroy();
    await handle?.stop();
    await rm(dir, { recursive: true, force: true });
  });
  return {
    store: () => {
      if (!store) throw new Error("s3 not ready");
      return store;
    },
    server: () => {
      if (!handle) throw new Error("s3 not ready");
      return handle;
    },
  };
}

export function md5Of(b: Uint8Array): string {
  return createHash("md5").update(b).digest("hex");
}

export function sha256(b: Uint8Array): string {
  return createHash("sha256").update(b).digest("hex");
}

/** Deterministic pseudo-random bytes, so two "builds" can differ on purpose. */
export function bytes(size: number, seed: number): Buffer {
  const b = Buffer.alloc(Math.ceil(size / 4) * 4);
  let x = (seed * 2654435761 + 1) >>> 0;
  for (let i = 0; i < b.length; i += 4) {
    x = (x * 1103515245 + 12345) >>> 0;
    b.writeUInt32LE(x, i);
  }
  return b.subarray(0, size);
}

export async function claim(db: Db, sessionId: string, cfg = TEST_CFG): Promise<JobTicket | null> {
  const r = await claimJob(db, cfg, { sessionId, claimRequestId: randomUUID() });
  return r.kind === "claimed" ? r.ticket : null;
}

/** The agent went silent: its lease ran out (what sleeping past a short TTL does, minus the flakiness). */
export async function expireLease(db: Db, attemptId: string): Promise<void> {
  await db.$executeRaw`UPDATE attempt SET lease_expires_at = now() - interval '1 second' WHERE id = ${attemptId}::uuid`;
}

export const claimsOf = (t: JobTicket) => ({ attemptId: t.attemptId, jobId: t.jobId, epoch: t.epoch });

/** PUTs one part to its presigned URL the way the agent does; returns the store's ETag. */
export async function putPart(url: string, body: Uint8Array): Promise<string> {
  const r = await fetch(url, {
    method: "PUT",
    body: new Uint8Array(body),
    headers: { "content-type": "application/octet-stream" },
  });
  if (r.status !== 200) throw new Error(`PUT part: ${r.status} ${await r.text()}`);
  const etag = r.headers.get("etag");
  if (!etag) throw new Error("no etag");
  return etag;
}

export function partBytes(data: Buffer, s: UploadSession, partNumber: number): Buffer {
  const p = s.parts[partNumber - 1];
  if (!p) throw new Error(`no part ${partNumber}`);
  return data.subarray(p.offset, p.offset + p.size);
}

/** Uploads and records the given parts (all by default) of `data` within an open session. */
/**
 * PUTs and records parts like an agent. `md5` says what the agent reports as each part's MD5:
 * nothing by default (an agent that predates it: the finaliser reads the object back).
 */
export async function uploadParts(
  db: Db,
  t: JobTicket,
  s: UploadSession,
  data: Buffer,
  only?: number[],
  md5?: (partNumber: number, body: Buffer) => string | null,
): Promise<void> {
  for (const p of s.parts) {
    if (only && !only.includes(p.partNumber)) continue;
    if (!p.url) continue;
    const body = partBytes(data, s, p.partNumber);
    const etag = await putPart(p.url, body);
    await recordPart(db, claimsOf(t), s.generationId, {
      partNumber: p.partNumber,
      sizeBytes: body.length,
      sha256: sha256(body),
      etag,
      md5: md5?.(p.partNumber, body) ?? null,
      tries: 1,
    });
  }
}

/** The whole producer path for one artifact: open, upload every part, finalise. */
export async function publish(db: Db, store: ArtifactStore, t: JobTicket, name: string, data: Buffer): Promise<string> {
  const s = await openUpload(db, store, claimsOf(t), {
    name,
    sizeBytes: data.length,
    sha256: sha256(data),
    format: "file",
  });
  await uploadParts(db, t, s, data);
  return (await finalizeUpload(db, store, claimsOf(t), s.generationId)).generationId;
}

export async function fetchBytes(url: string): Promise<Buffer> {
  const r = await fetch(url);
  if (r.status !== 200) throw new Error(`GET ${r.status}`);
  return Buffer.from(await r.arrayBuffer());
}

export const PRODUCER_CONSUMER = `version: 1
jobs:
  - name: compile
    steps: [make]
    artifacts:
      publish:
        - name: app
          path: target/app.jar
  - name: test
    steps: [make test]
    artifacts:
      restore:
        - from_job: compile
          name: app
          path: inputs/app.jar
`;
