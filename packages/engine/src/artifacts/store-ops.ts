// The few object-store operations artifacts need, each translating store errors into what the
// caller must decide on. Never called inside a database transaction (conventions rule 8).
import { createHash } from "node:crypto";
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import { Readable } from "node:stream";
import { finished } from "node:stream/promises";
import { DomainError } from "@kiln/domain";
import type { ArtifactStore } from "./artifact-context.ts";
import { OpenStream, type DataKey } from "../shredding/index.ts";

export function s3ErrorName(e: unknown): string {
  if (e && typeof e === "object") {
    const o = e as { name?: unknown; Code?: unknown };
    if (typeof o.Code === "string") return o.Code;
    if (typeof o.name === "string") return o.name;
  }
  return "Unknown";
}

function storeUnavailable(op: string, e: unknown): DomainError {
  return new DomainError("ARTIFACT.STORE_UNAVAILABLE", `object store ${op} failed: ${s3ErrorName(e)}`);
}

export async function createMultipartUpload(store: ArtifactStore, key: string): Promise<string> {
  try {
    const r = await store.s3.send(
      new CreateMultipartUploadCommand({ Bucket: store.bucket, Key: key, ContentType: "application/octet-stream" }),
    );
    if (!r.UploadId) throw new Error("no UploadId in the store's answer");
    return r.UploadId;
  } catch (e) {
    throw storeUnavailable("CreateMultipartUpload", e);
  }
}

/** Uploads one part from memory (the re-sealer's parts; agents PUT theirs to presigned URLs); its ETag. */
export async function uploadPart(
  store: ArtifactStore,
  key: string,
  uploadId: string,
  partNumber: number,
  body: Buffer,
): Promise<string> {
  try {
    const r = await store.s3.send(
      new UploadPartCommand({
        Bucket: store.bucket,
        Key: key,
        UploadId: uploadId,
        PartNumber: partNumber,
        Body: body,
        ContentLength: body.length,
      }),
    );
    if (!r.ETag) throw new Error("no ETag in the store's answer");
    return r.ETag;
  } catch (e) {
    throw storeUnavailable("UploadPart", e);
  }
}

export function presignPart(store: ArtifactStore, key: string, uploadId: string, partNumber: number): Promise<string> {
  return getSignedUrl(
    store.s3,
    new UploadPartCommand({ Bucket: store.bucket, Key: key, UploadId: uploadId, PartNumber: partNumber }),
    {
      expiresIn: store.settings.uploadUrlTtlSec,
    },
  );
}

export function presignDownload(store: ArtifactStore, key: string, filename?: string): Promise<string> {
  return getSignedUrl(
    store.s3,
    new GetObjectCommand({
      Bucket: store.bucket,
      Key: key,
      ...(filename ? { ResponseContentDisposition: `attachment; filename="${filename}"` } : {}),
    }),
    { expiresIn: store.settings.downloadUrlTtlSec },
  );
}

/** "invalid_part": the store holds other bytes for a part than the ETag recorded for it. */
export type CompleteOutcome = "completed" | "already_completed" | "invalid_part";

/**
 * Completes the multipart upload with the persisted part list. A second call after a lost response
 * finds the upload gone; the object then exists under this generation's fresh key, which only this
 * session can have produced (keys are never reused), so that counts as completed. The bytes are
 * verified afterwards either way (the finaliser: the store's multipart ETag, else a read-back).
 */
export async function completeMultipartUpload(
  store: ArtifactStore,
  key: string,
  uploadId: string,
  parts: { partNumber: number; etag: string }[],
): Promise<CompleteOutcome> {
  try {
    await store.s3.send(
      new CompleteMultipartUploadCommand({
        Bucket: store.bucket,
        Key: key,
        UploadId: uploadId,
        MultipartUpload: { Parts: parts.map((p) => ({ PartNumber: p.partNumber, ETag: p.etag })) },
      }),
    );
    return "completed";
  } catch (e) {
    if (await objectExists(store, key)) return "already_completed";
    if (s3ErrorName(e) === "InvalidPart") return "invalid_part";
    if (s3ErrorName(e) === "NoSuchUpload")
      throw new DomainError(
        "ARTIFACT.UPLOAD_NOT_FOUND",
        "the multipart upload no longer exists and no object was stored",
      );
    throw storeUnavailable("CompleteMultipartUpload", e);
  }
}

/** Size and ETag of a stored object, or null when there is none. */
export async function headObject(
  store: ArtifactStore,
  key: string,
): Promise<{ sizeBytes: number; etag: string | null } | null> {
  try {
    const r = await store.s3.send(new HeadObjectCommand({ Bucket: store.bucket, Key: key }));
    return { sizeBytes: Number(r.ContentLength ?? -1), etag: r.ETag ?? null };
  } catch (e) {
    const name = s3ErrorName(e);
    if (name === "NotFound" || name === "NoSuchKey") return null;
    throw storeUnavailable("HeadObject", e);
  }
}

export async function objectExists(store: ArtifactStore, key: string): Promise<boolean> {
  try {
    await store.s3.send(new HeadObjectCommand({ Bucket: store.bucket, Key: key }));
    return true;
  } catch (e) {
    const name = s3ErrorName(e);
    if (name === "NotFound" || name === "NoSuchKey") return false;
    throw storeUnavailable("HeadObject", e);
  }
}

const READ_RANGE_BYTES = 16 * 1024 * 1024;
const READ_RANGES_IN_FLIGHT = 4;

/**
 * Reads the stored object back and hashes it. This is Kiln's own verification: it does not trust a
 * multipart ETag as an MD5, nor a store that may not check checksums (s3rver checks none). Ranges
 * of 16 MiB are fetched 4 at a time (one stream per range is what stores serve fastest) and hashed
 * strictly in order, so at most 64 MiB is buffered per verification.
 */
export async function readBack(
  store: ArtifactStore,
  key: string,
  sealedUnder?: DataKey,
): Promise<{ sizeBytes: number; sha256: string }> {
  let size: number;
  try {
    size = Number((await store.s3.send(new HeadObjectCommand({ Bucket: store.bucket, Key: key }))).ContentLength ?? -1);
  } catch (e) {
    const name = s3ErrorName(e);
    if (name === "NotFound" || name === "NoSuchKey") return { sizeBytes: -1, sha256: "" };
    throw storeUnavailable("HeadObject", e);
  }
  const sink = digestSink(sealedUnder);
  if (size <= READ_RANGE_BYTES) {
    for (const c of await getRange(store, key, null)) sink.update(c);
    return sink.done();
  }
  const starts = Array.from({ length: Math.ceil(size / READ_RANGE_BYTES) }, (_, i) => i * READ_RANGE_BYTES);
  const inflight: Promise<Uint8Array[]>[] = [];
  let next = 0;
  for (const start of starts) {
    while (inflight.length < READ_RANGES_IN_FLIGHT && next < starts.length) {
      const s = starts[next++] ?? 0;
      const p = getRange(store, key, [s, Math.min(size, s + READ_RANGE_BYTES) - 1]);
      p.catch(() => undefined); // awaited in order below; don't let a later failure go unhandled
      inflight.push(p);
    }
    const chunks = await (inflight.shift() as Promise<Uint8Array[]>);
    let n = 0;
    for (const c of chunks) {
      sink.update(c);
      n += c.byteLength;
    }
    const want = Math.min(size, start + READ_RANGE_BYTES) - start;
    if (n !== want) throw storeUnavailable("GetObject", new Error(`range at ${start} returned ${n} of ${want} bytes`));
  }
  return sink.done();
}

/**
 * What a read-back hashes: the stored bytes, or for a sealed object (ADR 0037) the plaintext it
 * opens to, every chunk authenticated, so the check compares with the plaintext SHA-256 provenance
 * names. An object that does not open under its key reads as nothing (size -1): a mismatch.
 */
function digestSink(sealedUnder: DataKey | undefined): {
  update(c: Uint8Array): void;
  done(): Promise<{ sizeBytes: number; sha256: string }>;
} {
  const hash = createHash("sha256");
  let n = 0;
  if (!sealedUnder)
    return {
      update(c) {
        hash.update(c);
        n += c.byteLength;
      },
      done: async () => ({ sizeBytes: n, sha256: hash.digest("hex") }),
    };
  let failed = false;
  const open = new OpenStream((id) => {
    if (id !== sealedUnder.id)
      throw new DomainError("SHRED.DECRYPT_FAILED", `sealed under key ${id}, not ${sealedUnder.id}`);
    return sealedUnder;
  });
  open.on("data", (c: Buffer) => {
    hash.update(c);
    n += c.byteLength;
  });
  open.on("error", () => {
    failed = true;
  });
  return {
    update(c) {
      if (!failed) open.write(c);
    },
    async done() {
      if (!failed) {
        open.end();
        await finished(open).catch(() => undefined);
      }
      return failed ? { sizeBytes: -1, sha256: "" } : { sizeBytes: n, sha256: hash.digest("hex") };
    },
  };
}

async function getRange(store: ArtifactStore, key: string, range: [number, number] | null): Promise<Uint8Array[]> {
  let body: unknown;
  try {
    body = (
      await store.s3.send(
        new GetObjectCommand({
          Bucket: store.bucket,
          Key: key,
          ...(range ? { Range: `bytes=${range[0]}-${range[1]}` } : {}),
        }),
      )
    ).Body;
  } catch (e) {
    throw storeUnavailable("GetObject", e);
  }
  if (!body || typeof body !== "object" || !(Symbol.asyncIterator in body))
    throw new Error("object body is not a stream");
  const chunks: Uint8Array[] = [];
  for await (const chunk of body as AsyncIterable<Uint8Array>) chunks.push(chunk);
  return chunks;
}

/**
 * The plaintext of a sealed object as a stream: the stored bytes are fetched in one GET and opened
 * chunk by chunk (OpenStream authenticates each before handing it on; a bad chunk errors the
 * stream, so a client sees a cut-off body, never forged bytes). The key is zeroed when it ends.
 */
export async function openSealedObject(
  store: ArtifactStore,
  key: string,
  seal: { keyId: string; key: Buffer },
): Promise<Readable> {
  let body: unknown;
  try {
    body = (await store.s3.send(new GetObjectCommand({ Bucket: store.bucket, Key: key }))).Body;
  } catch (e) {
    const name = s3ErrorName(e);
    if (name === "NoSuchKey" || name === "NotFound")
      throw new DomainError("ARTIFACT.EXPIRED", "the artifact's bytes are gone from the store");
    throw storeUnavailable("GetObject", e);
  }
  if (!(body instanceof Readable)) throw new Error("object body is not a Node stream");
  const open = new OpenStream((id) => {
    if (id !== seal.keyId) throw new DomainError("SHRED.DECRYPT_FAILED", `sealed under key ${id}, not ${seal.keyId}`);
    return { id, key: seal.key };
  });
  const out = body.pipe(open);
  body.on("error", (e) => open.destroy(e));
  open.on("close", () => seal.key.fill(0));
  return out;
}

export type AbortOutcome = "aborted" | "already_gone" | "unsupported";

/** Abandons a multipart upload. "unsupported": the store has no AbortMultipartUpload (s3rver); its lifecycle rule must reap it. */
export async function abortMultipartUpload(store: ArtifactStore, key: string, uploadId: string): Promise<AbortOutcome> {
  try {
    await store.s3.send(new AbortMultipartUploadCommand({ Bucket: store.bucket, Key: key, UploadId: uploadId }));
    return "aborted";
  } catch (e) {
    const name = s3ErrorName(e);
    if (name === "NoSuchUpload") return "already_gone";
    if (name === "NotImplemented" || name === "MethodNotAllowed") return "unsupported";
    throw storeUnavailable("AbortMultipartUpload", e);
  }
}

/** Multipart uploads started under `key` (a crash between create and recording the id leaves one). */
export async function listUploadsUnder(store: ArtifactStore, key: string): Promise<string[] | "unsupported"> {
  try {
    const r = await store.s3.send(new ListMultipartUploadsCommand({ Bucket: store.bucket, Prefix: key }));
    return (r.Uploads ?? []).filter((u) => u.Key === key && u.UploadId).map((u) => u.UploadId as string);
  } catch (e) {
    const name = s3ErrorName(e);
    if (name === "NotImplemented" || name === "MethodNotAllowed") return "unsupported";
    throw storeUnavailable("ListMultipartUploads", e);
  }
}

export async function deleteObject(store: ArtifactStore, key: string): Promise<void> {
  try {
    await store.s3.send(new DeleteObjectCommand({ Bucket: store.bucket, Key: key }));
  } catch (e) {
    if (s3ErrorName(e) === "NoSuchKey") return;
    throw storeUnavailable("DeleteObject", e);
  }
}
