import { z } from "zod";

// The web app's configuration, parsed once at first use. process.env is read nowhere else.
const schema = z.object({
  /** PostgreSQL, the authority. `npm run up` fills it in from the embedded server when unset. */
  DATABASE_URL: z.string().min(1),
  /** Attempt lease TTL; agents' watchdogs kill sandboxes at the same bound. */
  KILN_LEASE_TTL_MS: z.coerce.number().int().min(500).default(30_000),
  /** How often agents should heartbeat (a fraction of the TTL). */
  KILN_HEARTBEAT_MS: z.coerce.number().int().min(100).default(10_000),
  /** Claim order: weighted fair queuing with lending (default) or plain FIFO (benchmark baseline). */
  KILN_DISPATCH_POLICY: z.enum(["fair", "fifo"]).default("fair"),
  KILN_DISPATCH_VIEW_MS: z.coerce.number().int().min(0).max(5_000).default(200),
  /** Automatic retries after platform failures per job. */
  KILN_RETRY_BUDGET: z.coerce.number().int().min(0).max(10).default(2),
  /** Largest request body accepted by any /v1 route. */
  KILN_MAX_BODY_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(5 * 1024 * 1024),
  /** Database pool size for this process. */
  KILN_DB_POOL: z.coerce.number().int().min(1).default(10),
  /** S3-compatible object store for artifacts and archived logs; unset means AWS's regional endpoint. */
  S3_ENDPOINT: z.preprocess((v) => (v === "" ? undefined : v), z.string().url().optional()),
  /** Bucket Kiln's objects live in (`npm run up` creates "kiln" in its local s3rver). */
  KILN_S3_BUCKET: z.string().min(1).default("kiln"),
  /** Region used for request signing. */
  S3_REGION: z.string().min(1).default("us-east-1"),
  /** Store credentials; the defaults are s3rver's fixed development pair. */
  S3_ACCESS_KEY_ID: z.string().min(1).default("S3RVER"),
  S3_SECRET_ACCESS_KEY: z.string().min(1).default("S3RVER"),
  /** Artifact multipart part size in MiB (5..5120; docs/adr/0007-artifacts.md). */
  KILN_ARTIFACT_PART_MIB: z.coerce.number().int().min(5).max(5120).default(64),
  /** Lifetime of presigned part-upload URLs, seconds. */
  KILN_ARTIFACT_UPLOAD_URL_TTL_S: z.coerce
    .number()
    .int()
    .min(60)
    .max(7 * 24 * 3600)
    .default(3600),
  /** Lifetime of presigned download URLs (agent restores, the public 302), seconds. */
  KILN_ARTIFACT_DOWNLOAD_URL_TTL_S: z.coerce
    .number()
    .int()
    .min(10)
    .max(7 * 24 * 3600)
    .default(300),
  /** Build caches (issue 8): lifetime of a restore's presigned GET, seconds; a restore slower than this is a miss. */
  KILN_CACHE_DOWNLOAD_URL_TTL_S: z.coerce
    .number()
    .int()
    .min(10)
    .max(24 * 3600)
    .default(900),
  /** Per-org cache byte quota in MiB when the org has none of its own (eviction is LRU beyond it). */
  KILN_CACHE_QUOTA_MIB: z.coerce
    .number()
    .int()
    .min(1)
    .default(10 * 1024),
  /** Redis for live log fan-out (pub/sub). A latency path only: logs replay from PostgreSQL/S3. */
  REDIS_URL: z.string().min(1).default("redis://127.0.0.1:6379"),
  /** Per-attempt log limit (stdout + stderr), enforced by ingest as well as by the agent. */
  KILN_LOG_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(64 * 1024 * 1024),
  /** Journal budget: acknowledged, unarchived log bytes; past it ingest answers 503 + Retry-After. */
  KILN_LOG_JOURNAL_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1024 * 1024)
    .default(4 * 1024 * 1024 * 1024),
  /** How often an idle SSE follower re-reads the log head (bounds the cost of a lost Redis message). */
  KILN_LOG_POLL_MS: z.coerce.number().int().min(50).default(1_000),
  /** Keep-alive comment interval on idle SSE streams. */
  KILN_SSE_KEEPALIVE_MS: z.coerce.number().int().min(100).default(15_000),
  /** Connections of the log journal's own pool (the byte path bypasses Prisma; ADR 0006). */
  KILN_LOG_DB_POOL: z.coerce.number().int().min(1).default(10),
  /** Mediated egress (issue 3): extra platform endpoints (comma-separated host[:port]) every
   * sandbox may reach. The S3 endpoint and the address agents claim through are always added. */
  KILN_EGRESS_PLATFORM_HOSTS: z.string().default(""),
});

export type WebEnv = z.infer<typeof schema>;
let parsed: WebEnv | null = null;

export function env(): WebEnv {
  if (!parsed) parsed = schema.parse(process.env);
  return parsed;
}
