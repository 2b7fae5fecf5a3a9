import { parseRegistryConfig } from "@kiln/oci";
import { z } from "zod";

// Workers' configuration, parsed once at boot. process.env is read nowhere else in this app.
const schema = z.object({
  /** PostgreSQL, the authority (and pg-boss's home). */
  DATABASE_URL: z.string().min(1),
  /** Lease TTL, heartbeat and retry budget: must match the web app's (same variables). */
  KILN_LEASE_TTL_MS: z.coerce.number().int().min(500).default(30_000),
  KILN_HEARTBEAT_MS: z.coerce.number().int().min(100).default(10_000),
  KILN_RETRY_BUDGET: z.coerce.number().int().min(0).max(10).default(2),
  /** Must match the web app's: preemption for returning lent capacity runs only under "fair". */
  KILN_DISPATCH_POLICY: z.enum(["fair", "fifo"]).default("fair"),
  /** Backoff before a platform-failure retry: base and cap. */
  KILN_BACKOFF_BASE_MS: z.coerce.number().int().min(0).default(1_000),
  KILN_BACKOFF_MAX_MS: z.coerce.number().int().min(0).default(60_000),
  /** How often the reconciler sweeps (expired leases, lost hints, stuck runs). */
  KILN_RECONCILE_MS: z.coerce.number().int().min(50).default(1_000),
  /** The relay's poll interval when no NOTIFY arrives (NOTIFY wakes it sooner). */
  KILN_RELAY_POLL_MS: z.coerce.number().int().min(10).default(1_000),
  /** Where git mirrors for reading workflow files live. */
  KILN_DATA_DIR: z.string().default("./.kiln-data"),
  /** S3-compatible object store for artifacts and archived logs; unset means AWS's regional endpoint. */
  S3_ENDPOINT: z.preprocess((v) => (v === "" ? undefined : v), z.string().url().optional()),
  /** Bucket Kiln's objects live in (`npm run up` creates "kiln" in its local s3rver). */
  KILN_S3_BUCKET: z.string().min(1).default("kiln"),
  /** Region used for request signing. */
  S3_REGION: z.string().min(1).default("us-east-1"),
  /** Store credentials; the defaults are s3rver's fixed development pair. */
  S3_ACCESS_KEY_ID: z.string().min(1).default("S3RVER"),
  S3_SECRET_ACCESS_KEY: z.string().min(1).default("S3RVER"),
  /** Unbound artifact generations and abandoned multipart uploads are collected this long after their attempt ended. */
  KILN_ARTIFACT_GC_GRACE_MS: z.coerce
    .number()
    .int()
    .min(0)
    .default(24 * 3600_000),
  /** Build cache entries unused this many days are evicted whatever the quota (issue 8: 7). */
  KILN_CACHE_IDLE_DAYS: z.coerce.number().int().min(1).max(365).default(7),
  /** Per-org cache byte quota in MiB when the org has none of its own (LRU eviction beyond it). */
  KILN_CACHE_QUOTA_MIB: z.coerce
    .number()
    .int()
    .min(1)
    .default(10 * 1024),
  /** How often the log archiver runs in-process (a cron job is the backstop). */
  KILN_LOG_ARCHIVE_MS: z.coerce.number().int().min(50).default(5_000),
  KILN_LOG_ARCHIVE_CONCURRENCY: z.coerce.number().int().min(1).max(16).default(3),
  /** Target size of an archived log segment; a still-open log is archived once this much is journaled. */
  KILN_LOG_SEGMENT_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(8 * 1024 * 1024),
  /**
   * Image registries (ADR 0012) as JSON keyed by host[:port], e.g.
   * {"registry.example.com":{"username":"ci","password":"..."},"127.0.0.1:5000":{}}. Freezing a run
   * resolves image tags to digests with these credentials; hosts not listed are tried anonymously
   * over https. Plain http only for 127.0.0.1/localhost. Default: none.
   */
  KILN_REGISTRIES: z
    .preprocess((v) => (v === "" ? undefined : v), z.string().optional())
    .transform((v, ctx) => {
      try {
        return parseRegistryConfig(v);
      } catch (err) {
        ctx.addIssue({ code: "custom", message: err instanceof Error ? err.message : String(err) });
        return z.NEVER;
      }
    }),
  /**
   * Default base image per pool for jobs that name none (ADR 0012), JSON {pool: ref}, e.g.
   * {"default":"127.0.0.1:5000/kiln/base:1"} after `npm run publish-base-image`. Default: none
   * (such jobs get no image; the process driver runs them on the host as before).
   */
  KILN_POOL_IMAGES: z
    .preprocess((v) => (v === "" || v === undefined ? "{}" : v), z.string())
    .transform((v, ctx) => {
      const r = z.record(z.string().min(1), z.string().min(1)).safeParse(
        (() => {
          try {
            return JSON.parse(v) as unknown;
          } catch {
            return null;
          }
        })(),
      );
      if (!r.success) {
        ctx.addIssue({ code: "custom", message: 'KILN_POOL_IMAGES must be JSON like {"default":"host/repo:tag"}' });
        return z.NEVER;
      }
      return r.data;
    }),
});

export type WorkersEnv = z.infer<typeof schema>;
export const env: WorkersEnv = schema.parse(process.env);
