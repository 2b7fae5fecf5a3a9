import { describe, expect, it } from "vitest";
import { DEFAULT_ARTIFACT_SETTINGS } from "../src/artifacts/artifact-context.ts";
import { DEFAULT_CACHE_SETTINGS } from "../src/caches/cache-context.ts";
import { DEFAULT_LOG_CONFIG } from "../src/logs/log-config.ts";
import { DEFAULT_ENGINE_CONFIG } from "../src/config/engine-config.ts";
import {
  artifactSettingsFromEnv,
  cacheSettingsFromEnv,
  engineConfigFromEnv,
  engineEnvSchema,
  logConfigFromEnv,
  objectStoreConfigFromEnv,
} from "../src/config/engine-env.ts";

// Pure: the engine's env schema and its mappings. An empty environment must give the documented
// defaults (each variable's default is the config constant, not a second copy of the number).
describe("engine env", () => {
  it("an empty environment gives the engine's defaults", () => {
    const env = engineEnvSchema.parse({});
    expect(engineConfigFromEnv(env)).toEqual(DEFAULT_ENGINE_CONFIG);
    expect(artifactSettingsFromEnv(env)).toEqual(DEFAULT_ARTIFACT_SETTINGS);
    expect(cacheSettingsFromEnv(env)).toEqual(DEFAULT_CACHE_SETTINGS);
    expect(logConfigFromEnv(env)).toEqual(DEFAULT_LOG_CONFIG);
    expect(objectStoreConfigFromEnv(env)).toEqual({
      endpoint: undefined,
      region: "us-east-1",
      accessKeyId: "S3RVER",
      secretAccessKey: "S3RVER",
    });
  });

  it("reads retention windows as JSON over the seed's defaults and refuses a malformed one", () => {
    const env = engineEnvSchema.parse({ KILN_RETENTION_WINDOWS: '{"artifact":{"other":7}}' });
    expect(artifactSettingsFromEnv(env).retention?.artifact).toEqual({ release: 400, default_branch: 90, other: 7 });
    expect(logConfigFromEnv(env).retention?.log).toEqual({ release: 400, default_branch: 90, other: 90 });
    expect(engineEnvSchema.safeParse({ KILN_RETENTION_WINDOWS: '{"artifact":{"other":0}}' }).success).toBe(false);
    expect(engineEnvSchema.safeParse({ KILN_RETENTION_WINDOWS: '{"tlog":{"other":1}}' }).success).toBe(false);
    expect(engineEnvSchema.safeParse({ KILN_RETENTION_WINDOWS: "not json" }).success).toBe(false);
  });

  it("maps every variable, in the units the engine uses", () => {
    const env = engineEnvSchema.parse({
      KILN_BACKOFF_BASE_MS: "250",
      KILN_BACKOFF_MAX_MS: "9000",
      KILN_LEASE_TTL_MS: "60000",
      S3_ENDPOINT: "",
      S3_REGION: "eu-west-1",
      KILN_ARTIFACT_PART_MIB: "8",
      KILN_ARTIFACT_GC_GRACE_MS: "1000",
      KILN_CACHE_QUOTA_MIB: "2",
      KILN_CACHE_IDLE_DAYS: "3",
      KILN_LOG_SEGMENT_BYTES: "4096",
      KILN_LOG_MAX_BYTES: "2048",
    });
    expect(engineConfigFromEnv(env)).toMatchObject({
      backoffBaseMs: 250,
      backoffMaxMs: 9000,
      leaseTtlMs: 60000,
      redispatchAfterMs: DEFAULT_ENGINE_CONFIG.redispatchAfterMs,
    });
    expect(objectStoreConfigFromEnv(env)).toMatchObject({ endpoint: undefined, region: "eu-west-1" });
    expect(artifactSettingsFromEnv(env)).toMatchObject({ partSizeBytes: 8 * 1024 * 1024, gcGraceMs: 1000 });
    expect(cacheSettingsFromEnv(env)).toMatchObject({ defaultQuotaBytes: 2 * 1024 * 1024, idleMs: 3 * 24 * 3600_000 });
    expect(logConfigFromEnv(env)).toMatchObject({ segmentTargetBytes: 4096, maxBytesPerAttempt: 2048 });
  });

  it("refuses values outside their bounds", () => {
    expect(engineEnvSchema.safeParse({ KILN_LEASE_TTL_MS: "10" }).success).toBe(false);
    expect(engineEnvSchema.safeParse({ KILN_RETRY_BUDGET: "11" }).success).toBe(false);
    expect(engineEnvSchema.safeParse({ KILN_ARTIFACT_PART_MIB: "4" }).success).toBe(false);
    expect(engineEnvSchema.safeParse({ S3_ENDPOINT: "not a url" }).success).toBe(false);
  });
});
