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
  /** Automatic retries after platform failures per job. */
  KILN_RETRY_BUDGET: z.coerce.number().int().min(0).max(10).default(2),
  /** Largest request body accepted by any /v1 route. */
  KILN_MAX_BODY_BYTES: z.coerce.number().int().min(1024).default(5 * 1024 * 1024),
  /** Database pool size for this process. */
  KILN_DB_POOL: z.coerce.number().int().min(1).default(10),
});

export type WebEnv = z.infer<typeof schema>;
let parsed: WebEnv | null = null;

export function env(): WebEnv {
  if (!parsed) parsed = schema.parse(process.env);
  return parsed;
}
