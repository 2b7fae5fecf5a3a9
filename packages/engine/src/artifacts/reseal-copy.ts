// The byte half of a re-seal (docs/adr/0037 "Reseal"): the old object is opened under its key as it
// streams from the store and sealed again, part by part, under the new key and salt into a new
// object, in the same chunk-aligned multipart layout the agent uploads (@kiln/domain sealedParts).
// The plaintext is hashed on the way through and the upload is completed only when it is exactly
// the bytes provenance names, so a re-seal can never swap the content of an artifact.
import { createHash } from "node:crypto";
import { finished } from "node:stream/promises";
import {
  decideArtifactSeal,
  decideStoreDigestCheck,
  DomainError,
  sealedParts,
  type PartPlan,
  type SealedPart,
} from "@kiln/domain";
import type { ArtifactStore } from "./artifact-context.ts";
import {
  abortMultipartUpload,
  completeMultipartUpload,
  createMultipartUpload,
  deleteObject,
  headObject,
  openSealedObject,
  readBack,
  uploadPart,
} from "./store-ops.ts";
import { headerFor, PartSealStream } from "@kiln/chunk-cipher";
import type { DataKey } from "../shredding/index.ts";

export interface ResealSource {
  objectKey: string;
  key: DataKey;
  sizeBytes: number;
  sha256: string;
}

export interface ResealTarget {
  objectKey: string;
  key: DataKey;
  salt: Buffer;
  chunkSize: number;
  plan: PartPlan;
}

/** Copies `src` into `dst` sealed under the new key; the new object's stored size. */
export async function resealObject(store: ArtifactStore, src: ResealSource, dst: ResealTarget): Promise<number> {
  const layouts = sealedParts(src.sizeBytes, dst.plan, dst.chunkSize);
  const header = headerFor(dst.key.id, dst.chunkSize, dst.salt);
  const stored = layouts.reduce((n, p) => n + p.sealedSize, 0);
  // openSealedObject zeroes the key it is given when the stream ends: hand it a copy.
  const plain = await openSealedObject(store, src.objectKey, { keyId: src.key.id, key: Buffer.from(src.key.key) });
  let uploadId: string | null = null;
  let completed = false;
  try {
    uploadId = await createMultipartUpload(store, dst.objectKey);
    const parts: { partNumber: number; etag: string; md5: string }[] = [];
    const hash = createHash("sha256");
    let seen = 0;
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    const flush = async (layout: SealedPart) => {
      const body = await sealPart(dst.key.key, header, layout, Buffer.concat(pending, pendingBytes));
      pending = [];
      pendingBytes = 0;
      const etag = await uploadPart(store, dst.objectKey, uploadId as string, layout.partNumber, body);
      parts.push({ partNumber: layout.partNumber, etag, md5: createHash("md5").update(body).digest("hex") });
    };
    let index = 0;
    for await (const chunk of plain as AsyncIterable<Buffer>) {
      hash.update(chunk);
      seen += chunk.length;
      for (let off = 0; off < chunk.length; ) {
        const layout = layouts[index];
        const take = layout ? Math.min(layout.plainSize - pendingBytes, chunk.length - off) : 0;
        if (!layout || take === 0) throw mismatch(`the stored object opens to more than ${src.sizeBytes} bytes`);
        pending.push(chunk.subarray(off, off + take));
        pendingBytes += take;
        off += take;
        // The last part waits for the end of the stream: only then is it known to be complete.
        if (pendingBytes === layout.plainSize && index < layouts.length - 1) {
          await flush(layout);
          index++;
        }
      }
    }
    const last = layouts[index];
    if (!last || index !== layouts.length - 1 || pendingBytes !== last.plainSize || seen !== src.sizeBytes)
      throw mismatch(`the stored object opens to ${seen} bytes, not ${src.sizeBytes}`);
    const observed = { sizeBytes: seen, sha256: hash.digest("hex") };
    if (decideArtifactSeal({ sizeBytes: src.sizeBytes, sha256: src.sha256 }, observed) === "mismatch")
      throw mismatch(`the stored object opens to sha256 ${observed.sha256}, not ${src.sha256}`);
    await flush(last);
    const done = await completeMultipartUpload(store, dst.objectKey, uploadId, parts);
    completed = true;
    if (done === "invalid_part") throw mismatch("the store refused the re-sealed parts it was just sent");
    await verifyStored(store, dst, stored, parts, src);
    return stored;
  } catch (e) {
    plain.destroy();
    // Nothing names the new object yet: whatever exists of it goes.
    if (uploadId && !completed) await abortMultipartUpload(store, dst.objectKey, uploadId);
    await deleteObject(store, dst.objectKey);
    throw e;
  }
}

/** The new object as stored: its multipart ETag against our part MD5s, else read back and opened. */
async function verifyStored(
  store: ArtifactStore,
  dst: ResealTarget,
  stored: number,
  parts: { md5: string }[],
  src: ResealSource,
): Promise<void> {
  const head = await headObject(store, dst.objectKey);
  if (!head) throw mismatch("the re-sealed object is not in the store after completing it");
  const md5 = (b: Uint8Array) => createHash("md5").update(b).digest("hex");
  if (decideStoreDigestCheck({ sizeBytes: stored, partMd5s: parts.map((p) => p.md5) }, head, md5) === "verified")
    return;
  const observed = await readBack(store, dst.objectKey, dst.key);
  if (decideArtifactSeal({ sizeBytes: src.sizeBytes, sha256: src.sha256 }, observed) === "mismatch")
    throw mismatch(`the re-sealed object reads back as ${observed.sizeBytes} bytes, sha256 ${observed.sha256 || "-"}`);
}

async function sealPart(key: Buffer, header: Buffer, layout: SealedPart, plain: Buffer): Promise<Buffer> {
  const s = new PartSealStream(key, header, layout);
  const out: Buffer[] = [];
  s.on("data", (c: Buffer) => out.push(c));
  s.end(plain);
  await finished(s);
  const body = Buffer.concat(out);
  if (body.length !== layout.sealedSize)
    throw new DomainError(
      "SHRED.BAD_FORMAT",
      `part ${layout.partNumber} sealed to ${body.length} bytes, not ${layout.sealedSize}`,
    );
  return body;
}

function mismatch(message: string): DomainError {
  return new DomainError("ARTIFACT.VERIFICATION_FAILED", `re-seal refused: ${message}`);
}
