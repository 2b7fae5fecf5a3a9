// The object-store calls caches need. Never inside a database transaction (conventions rule 8).
import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import { DomainError } from "@kiln/domain";
import { DEFAULT_ARTIFACT_SETTINGS, objectExists, readBack, s3ErrorName } from "../artifacts/index.ts";
import type { CacheStore } from "./cache-context.ts";

export function presignCachePut(store: CacheStore, key: string, sizeBytes: number): Promise<string> {
  return getSignedUrl(
    store.s3,
    new PutObjectCommand({
      Bucket: store.bucket,
      Key: key,
      ContentLength: sizeBytes,
      ContentType: "application/octet-stream",
    }),
    { expiresIn: store.settings.uploadUrlTtlSec },
  );
}

export function presignCacheGet(store: CacheStore, key: string): Promise<string> {
  return getSignedUrl(store.s3, new GetObjectCommand({ Bucket: store.bucket, Key: key }), {
    expiresIn: store.settings.downloadUrlTtlSec,
  });
}

/**
 * Same read-back as artifacts (ADR 0007): hash what the store really holds, because a presigned
 * PUT's bytes are whatever the uploader sent and s3rver verifies no checksum.
 */
export async function readBackCache(store: CacheStore, key: string): Promise<{ sizeBytes: number; sha256: string }> {
  try {
    return await readBack({ s3: store.s3, bucket: store.bucket, settings: DEFAULT_ARTIFACT_SETTINGS }, key);
  } catch (e) {
    throw new DomainError(
      "CACHE.STORE_UNAVAILABLE",
      `object store read-back failed: ${e instanceof Error ? e.message : String(e)}`,
    );
  }
}

export async function deleteCacheObject(store: CacheStore, key: string): Promise<void> {
  // Only ever keys this capability minted: eviction can never reach an artifact or a log.
  if (!key.startsWith("caches/")) throw new Error(`refusing to delete ${key}: not a cache object`);
  try {
    await store.s3.send(new DeleteObjectCommand({ Bucket: store.bucket, Key: key }));
  } catch (e) {
    if (s3ErrorName(e) === "NoSuchKey") return;
    throw new DomainError("CACHE.STORE_UNAVAILABLE", `object store DeleteObject failed: ${s3ErrorName(e)}`);
  }
}

/** Whether the store still holds a cache object; a store error is not an answer (it throws). */
export async function cacheObjectExists(store: CacheStore, key: string): Promise<boolean> {
  try {
    return await objectExists({ s3: store.s3, bucket: store.bucket, settings: DEFAULT_ARTIFACT_SETTINGS }, key);
  } catch (e) {
    throw new DomainError(
      "CACHE.STORE_UNAVAILABLE",
      `object store HeadObject failed: ${e instanceof Error ? e.message : String(e)}`,
    );
  }
}
