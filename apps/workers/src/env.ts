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
});

export type WorkersEnv = z.infer<typeof schema>;
export const env: WorkersEnv = schema.parse(process.env);
