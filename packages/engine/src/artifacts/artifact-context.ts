import type { S3Client } from "@aws-sdk/client-s3";
import type { ShredKeyDeps } from "../shredding/index.ts";
import { DEFAULT_PART_BYTES, DEFAULT_RETENTION_WINDOWS, type RetentionWindows } from "@kiln/domain";

/** Artifact knobs. Apps map them from env with artifactSettingsFromEnv (config/engine-env.ts). */
export interface ArtifactSettings {
  /** Preferred multipart part size (ADR 0007: 64 MiB; a 20 GiB artifact is 320 parts). */
  partSizeBytes: number;
  /** Lifetime of presigned part URLs; the agent re-opens the session for fresh ones. */
  uploadUrlTtlSec: number;
  /** Lifetime of presigned download URLs (agent restores and the public 302). */
  downloadUrlTtlSec: number;
  /** Unbound generations and abandoned multipart uploads are collected this long after creation. */
  gcGraceMs: number;
  /** Platform retention windows stamped on a generation when it is sealed (issue 21); default the seed's. */
  retention?: RetentionWindows;
}

export const DEFAULT_ARTIFACT_SETTINGS: ArtifactSettings = {
  partSizeBytes: DEFAULT_PART_BYTES,
  uploadUrlTtlSec: 3600,
  downloadUrlTtlSec: 300,
  gcGraceMs: 24 * 3600_000,
  retention: DEFAULT_RETENTION_WINDOWS,
};

/** The object store and bucket artifacts live in, plus settings. Built once per process by the app. */
export interface ArtifactStore {
  s3: S3Client;
  bucket: string;
  settings: ArtifactSettings;
  /**
   * Crypto-shredding (issue 21, docs/adr/0037): when set, uploads from agents that offer sealing are
   * sealed under the org's artifact data key of the day, and sealed objects open through it. Null or
   * absent: artifacts are stored in clear, as before.
   */
  shred?: ShredKeyDeps | null;
}
