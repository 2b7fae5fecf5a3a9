import { readFileSync } from "node:fs";
import {
  engineConfigFromEnv,
  engineEnvSchema,
  forgeConfigFromEnv,
  identityKekFileFromEnv,
  parseAgentRegistries,
  rateLimitEnvSchema,
  type EngineConfig,
  type ForgeConfig,
} from "@kiln/engine";
import { z } from "zod";

// The web app's configuration, parsed once at first use (not at import: `next build` has no
// database). process.env is read nowhere else. The engine's variables (lease, retries, backoff,
// dispatch, object store, artifacts, caches, logs) come from its one schema, shared with the workers.
const schema = z.object({
  ...engineEnvSchema.shape,
  // Rate limits (docs/adr/0044): KILN_RATE_LIMIT_* with their defaults, commented in their schema
  // (packages/engine/src/rate-limits/rate-limit-config.ts) and in docs/operating.md.
  ...rateLimitEnvSchema.shape,
  /** PostgreSQL, the authority. `npm run up` fills it in from the embedded server when unset. */
  DATABASE_URL: z.string().min(1),
  /** Largest request body accepted by any /v1 route. */
  KILN_MAX_BODY_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(5 * 1024 * 1024),
  /** Database pool size for this process. */
  KILN_DB_POOL: z.coerce.number().int().min(1).default(10),
  /** Redis for live log fan-out (pub/sub) and the rate-limit buckets. Neither is an authority: logs
   * replay from PostgreSQL/S3, and rate limits fail open while Redis is away (docs/adr/0044). */
  REDIS_URL: z.string().min(1).default("redis://127.0.0.1:6379"),
  /** How often an idle SSE follower re-reads the log head (bounds the cost of a lost Redis message). */
  KILN_LOG_POLL_MS: z.coerce.number().int().min(50).default(1_000),
  /** Keep-alive comment interval on idle SSE streams. */
  KILN_SSE_KEEPALIVE_MS: z.coerce.number().int().min(100).default(15_000),
  /** Connections of the log journal's own pool (the byte path bypasses Prisma; ADR 0006). */
  KILN_LOG_DB_POOL: z.coerce.number().int().min(1).default(10),
  /** Local state; a manual trigger's ref check keeps its git mirrors under <dir>/git-ref-check. */
  KILN_DATA_DIR: z.string().default("./.kiln-data"),
  /**
   * The platform's public URL: the issuer of job ID tokens (ADR 0024) and where their discovery
   * document and JWKS are fetched from, so it must be what relying parties reach. The default is a
   * local `npm run up`; the dashboard's Origin check reads the same variable (auth/env.ts).
   */
  KILN_PUBLIC_URL: z.preprocess((v) => (v === "" ? undefined : v), z.url().default("http://localhost:3000")),
  /** As for the workers (docs/adr/0017): enables file:// under this root and loopback clone URLs. */
  KILN_LOCAL_REPOS_ROOT: z.preprocess((v) => (v === "" ? undefined : v), z.string().startsWith("/").optional()),
  /** Secrets (ADR 0025): the file holding the base64 32-byte KEK. Unset: secrets cannot be set or delivered
   * (SECRET.KEK_UNAVAILABLE, 503); `npm run up` and the test platform generate one. Re-read after a rotation. */
  KILN_SECRETS_KEK_FILE: z.preprocess((v) => (v === "" ? undefined : v), z.string().optional()),
  /** The KEK's id; default the first 8 hex characters of the SHA-256 of its 32 bytes (which the key always
   * answers to as well). The workers and the CLI read it alike (kekSourceFromEnv, issue 28). */
  KILN_SECRETS_KEK_ID: z.preprocess(
    (v) => (v === "" ? undefined : v),
    z
      .string()
      .regex(/^[A-Za-z0-9._-]{1,64}$/)
      .optional(),
  ),
  /**
   * Environments (issue 18, ADR 0032): how long one gate's fact query may take before the gate is
   * unavailable (production then denies with GATE.UNAVAILABLE). Default 400 ms, inside the 500 ms
   * decision budget of seed 002.
   */
  KILN_GATE_TIMEOUT_MS: z.coerce.number().int().min(10).max(10_000).default(400),
  /**
   * The registries (and mirrors) images are pulled from, the workers' KILN_REGISTRIES: told to every
   * agent when its session starts (issue 30), credentials only to the platform's own pools. Default none.
   */
  KILN_REGISTRIES: z
    .preprocess((v) => (v === "" ? undefined : v), z.string().optional())
    .transform((v, ctx) => {
      try {
        return parseAgentRegistries(v);
      } catch (err) {
        ctx.addIssue({ code: "custom", message: err instanceof Error ? err.message : String(err) });
        return z.NEVER;
      }
    }),
  /**
   * The bearer token Prometheus sends to scrape GET /metrics on this port (docs/adr/0043). Unset
   * (the default): /metrics answers 404, so nothing about the fleet is exposed by accident. At least
   * 16 characters; compared in constant time.
   */
  KILN_METRICS_TOKEN: z.preprocess((v) => (v === "" ? undefined : v), z.string().min(16).optional()),
});

export type WebEnv = z.infer<typeof schema>;
let parsed: WebEnv | null = null;

/** Parses an env record (process.env at runtime; a plain record in tests). */
export function parseWebEnv(source: Record<string, string | undefined>): WebEnv {
  return schema.parse(source);
}

/** The engine config this process runs with: the workers' mapping, so both read the same env alike. */
export function webEngineConfig(e: WebEnv): EngineConfig {
  return engineConfigFromEnv(e);
}

/** The ID-token issuer: KILN_PUBLIC_URL without a trailing slash (the `iss` relying parties pin). */
export function idTokenIssuer(e: WebEnv): string {
  return e.KILN_PUBLIC_URL.replace(/\/+$/, "");
}

/** Where the identity KEK lives (KILN_IDENTITY_KEK_FILE in the engine's schema, read alike by the workers). */
export function identityKekFile(e: WebEnv): string {
  return identityKekFileFromEnv(e);
}

let forge: ForgeConfig | null = null;

/** The forge loop's settings (ADR 0028): the repo forge view reports which credentials apply. */
export function webForgeConfig(): ForgeConfig {
  forge ??= forgeConfigFromEnv(env(), (p) => readFileSync(p, "utf8"));
  return forge;
}

export function env(): WebEnv {
  if (!parsed) parsed = parseWebEnv(process.env);
  return parsed;
}
