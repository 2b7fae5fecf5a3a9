import { readFileSync } from "node:fs";
import {
  engineConfigFromEnv,
  engineEnvSchema,
  forgeConfigFromEnv,
  type EngineConfig,
  type ForgeConfig,
} from "@kiln/engine";
import { parseRegistryConfig } from "@kiln/oci";
import { z } from "zod";

// Workers' configuration, parsed once at boot. process.env is read nowhere else in this app. The
// engine's variables (lease, retries, backoff, dispatch, object store, artifacts, caches, logs) come
// from its one schema, shared with the web app, so the two processes cannot read them differently.
const schema = z.object({
  ...engineEnvSchema.shape,
  /** PostgreSQL, the authority (and pg-boss's home). */
  DATABASE_URL: z.string().min(1),
  /** How often the reconciler sweeps (expired leases, lost hints, stuck runs). */
  KILN_RECONCILE_MS: z.coerce.number().int().min(50).default(1_000),
  /** The relay's poll interval when no NOTIFY arrives (NOTIFY wakes it sooner). */
  KILN_RELAY_POLL_MS: z.coerce.number().int().min(10).default(1_000),
  /** Where git mirrors for reading workflow files live. */
  KILN_DATA_DIR: z.string().default("./.kiln-data"),
  /**
   * Local repositories (docs/adr/0017): an absolute directory file:// clone URLs may point under;
   * setting it also admits clone URLs on loopback (the test git server). Unset (the default): only
   * https:// clone URLs to public addresses. `npm run up` sets it for its demo repository.
   */
  KILN_LOCAL_REPOS_ROOT: z.preprocess((v) => (v === "" ? undefined : v), z.string().startsWith("/").optional()),
  /** How often the forge reconciler runs (missed deliveries, undelivered statuses; ADR 0028). It
   * also runs once at start. */
  KILN_FORGE_RECONCILE_MS: z.coerce.number().int().min(100).default(60_000),
  /**
   * The attestor's ECDSA P-256 private key (PKCS#8 PEM, mode 0600; issue 17, ADR 0027). Only the
   * workers read it; host agents and sandboxes never get it. Unset (the default): nothing is signed
   * and attestation jobs fail with that reason until it is set. `npm run up` creates one.
   */
  KILN_ATTESTATION_KEY_FILE: z.preprocess((v) => (v === "" ? undefined : v), z.string().startsWith("/").optional()),
  /** How often the log archiver runs in-process (a cron job is the backstop). */
  KILN_LOG_ARCHIVE_MS: z.coerce.number().int().min(50).default(5_000),
  /**
   * How often this process runs the scheduler pass in-process (issue 20; the per-minute pg-boss cron
   * is the backstop). Every worker process runs it; the slot's compare-and-set and primary key let
   * exactly one admit each slot. Default 10 s: a slot starts within that of its minute.
   */
  KILN_SCHEDULE_TICK_MS: z.coerce.number().int().min(100).default(10_000),
  KILN_LOG_ARCHIVE_CONCURRENCY: z.coerce.number().int().min(1).max(16).default(3),
  /**
   * Image registries (ADR 0012) as JSON keyed by host[:port], e.g.
   * {"registry.example.com":{"username":"ci","password":"..."},"127.0.0.1:5000":{}}. Freezing a run
   * resolves image tags to digests with these credentials; registries not listed are refused
   * (docs/adr/0017). Plain http only for 127.0.0.1/localhost. Default: none.
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
   * Default image per pool for jobs that name none (ADR 0012, issue 30), JSON {pool: ref}, e.g.
   * {"default":"127.0.0.1:5000/kiln/base:1"} after `npm run publish-base-image`; an org pool is named
   * `<org>/<name>`, `*` covers every pool without an entry, and `host` runs such jobs on the pool's
   * hosts' own system directories, on purpose (recorded as image `host`). Default: none, and a job
   * naming no image in a pool without a default is refused (blocked_by_policy, image.none_for_pool).
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
  /**
   * The platform's public URL; the transparency log's origin defaults to `<its host>/tlog`, and
   * provenance names the builder and each invocation under it (default http://localhost:3000).
   */
  KILN_PUBLIC_URL: z.preprocess((v) => (v === "" ? undefined : v), z.url().optional()),
  /** Per gate fact query when the workers re-decide a promotion (issue 18; the web server's default too). */
  KILN_GATE_TIMEOUT_MS: z.coerce.number().int().min(10).max(10_000).default(400),
  /**
   * The transparency log's origin (docs/adr/0026): the checkpoints' first line and the log key's
   * name. Default `<KILN_PUBLIC_URL host>/tlog`, else `localhost/tlog`. Fixed for the log's life:
   * a worker configured with another origin than the stored key's refuses to sign.
   */
  KILN_TLOG_ORIGIN: z.preprocess(
    (v) => (v === "" ? undefined : v),
    z
      .string()
      .regex(/^[^\s+]+$/)
      .optional(),
  ),
  /**
   * Key-encryption key (base64 of 32 bytes) sealing the log's Ed25519 key in the database. Unset:
   * generated once into `<KILN_DATA_DIR>/keys/tlog-kek` (mode 0600); workers on several hosts must
   * share one value. Never given to the web app or a host agent.
   */
  KILN_TLOG_KEY_ENCRYPTION_KEY: z.preprocess((v) => (v === "" ? undefined : v), z.string().optional()),
  /** Secrets KEK file and id (ADR 0025), as the web app reads them: the workers open org DEKs to
   * wrap and unwrap crypto-shredding data keys (ADR 0037). Unset: logs are archived unencrypted. */
  KILN_SECRETS_KEK_FILE: z.preprocess((v) => (v === "" ? undefined : v), z.string().optional()),
  KILN_SECRETS_KEK_ID: z.preprocess((v) => (v === "" ? undefined : v), z.string().optional()),
  /** How often the workers sign a checkpoint when the log has grown (issue 17: within 5 s). */
  KILN_TLOG_CHECKPOINT_MS: z.coerce.number().int().min(50).max(5_000).default(1_000),
  /**
   * How long before a data key's due the re-sealer moves artifacts that must outlive it (held, an
   * environment pointer or its history, a consumer; docs/adr/0037 "Reseal"). Default 48 h: a day of
   * missed hourly passes still leaves a day. Longer only costs earlier copies.
   */
  KILN_SHRED_RESEAL_LOOKAHEAD_H: z.coerce.number().int().min(1).max(720).default(48),
  /**
   * Port of this process's Prometheus /metrics (docs/adr/0043). Unset (the default): not served,
   * since several worker processes may share a host. Not the web app's port and unauthenticated,
   * hence the loopback default for KILN_METRICS_HOST.
   */
  KILN_METRICS_PORT: z.preprocess(
    (v) => (v === "" ? undefined : v),
    z.coerce.number().int().min(1).max(65_535).optional(),
  ),
  /** Address the metrics port binds (default 127.0.0.1; 0.0.0.0 only behind a network policy). */
  KILN_METRICS_HOST: z.string().min(1).default("127.0.0.1"),
});

export type WorkersEnv = z.infer<typeof schema>;

/** Parses an env record (process.env at boot; a plain record in tests). */
export function parseWorkersEnv(source: Record<string, string | undefined>): WorkersEnv {
  return schema.parse(source);
}

/** The engine config this process runs with: the web app's mapping, so both read the same env alike. */
export function workersEngineConfig(e: WorkersEnv): EngineConfig {
  return engineConfigFromEnv(e);
}

/** The forge loop's config; reads the GitHub App's private key file (boot fails if it is missing). */
export function workersForgeConfig(e: WorkersEnv): ForgeConfig {
  return forgeConfigFromEnv(e, (p) => readFileSync(p, "utf8"));
}

let parsed: WorkersEnv | null = null;

/** The process's configuration, parsed on first use (index.ts calls it first thing at boot). */
export function workersEnv(): WorkersEnv {
  parsed ??= parseWorkersEnv(process.env);
  return parsed;
}
