import { z } from "zod";
import { OUTCOMES } from "../runs/index.ts";
import { RUNNER_SIZES } from "../dispatch/index.ts";

// The attempt's life: claim (host credential), then heartbeat and completion (job token).
export const claimRequest = z
  .object({
    session_id: z.string().uuid(),
    claim_request_id: z.string().min(8).max(100),
    wait_ms: z.number().int().min(0).max(30_000).default(0),
  })
  .strict();

// Mediated egress (issue 3): what the attempt may reach, computed at claim (see egress.ts).
export const egressPolicy = z.object({
  trustClass: z.enum(["trusted", "untrusted"]),
  /** The org's allow-list (canonical patterns); the domain's decideEgress ignores it for untrusted runs. */
  allowList: z.array(z.string().max(300)).max(1000),
});
export const jobTicket = z.object({
  runId: z.string(),
  jobId: z.string(),
  attemptId: z.string(),
  orgId: z.string(),
  epoch: z.number().int(),
  jobToken: z.string(),
  leaseExpiresAt: z.string(),
  leaseTtlMs: z.number(),
  heartbeatMs: z.number(),
  trustClass: z.enum(["trusted", "untrusted"]),
  /** Mediated egress (issue 3): the attempt's policy, fixed at claim. Absent = nothing is reachable. */
  egress: egressPolicy.optional(),
  source: z.object({ cloneUrl: z.string(), commitSha: z.string() }),
  job: z.object({
    name: z.string(),
    index: z.number().int(),
    image: z.string().nullable(),
    /** Manifest digest pinned at freeze time (ADR 0012); absent from control planes before it. */
    imageDigest: z
      .string()
      .regex(/^sha256:[0-9a-f]{64}$/)
      .nullable()
      .optional(),
    steps: z.array(z.string()),
    env: z.record(z.string(), z.string()),
    timeoutMinutes: z.number(),
    /** runs_on.size (issue 20): a microVM host gives the job SIZE_RESOURCES[size]. Absent: small. */
    size: z.enum(RUNNER_SIZES).optional(),
    artifacts: z.object({
      publish: z.array(z.object({ name: z.string(), path: z.string() })),
      restore: z.array(z.object({ fromJob: z.string(), name: z.string(), path: z.string() })),
    }),
    /** Build cache block (issue 8); absent from control planes before it. */
    cache: z
      .object({
        kind: z.enum(["dependencies", "directory"]),
        version: z.string(),
        inputs: z.array(z.string()),
        paths: z.array(z.string()),
      })
      .nullable()
      .optional(),
    /** Declared secret names (issue 16): the agent asks the broker only when there are some. */
    secrets: z.array(z.string()).optional(),
    secretsRequired: z.boolean().optional(),
  }),
});
export type JobTicketWire = z.infer<typeof jobTicket>;

export const heartbeatRequest = z
  .object({
    epoch: z.number().int().min(1),
    phase: z
      .object({
        image_ms: z.number().int().min(0).optional(),
        dispatch_ms: z.number().int().min(0).optional(),
        started: z.boolean().optional(),
      })
      .strict()
      .optional(),
  })
  .strict();
export const heartbeatResponse = z.object({ lease_expires_at: z.string(), cancel_requested: z.boolean() });

export const completeRequest = z
  .object({
    epoch: z.number().int().min(1),
    outcome: z.enum(OUTCOMES),
    cause: z.string().max(200).nullable().optional(),
    message: z.string().max(4000).nullable().optional(),
    exit_code: z.number().int().nullable().optional(),
    sandbox_destroyed: z.boolean(),
    phases: z
      .object({
        image_ms: z.number().int().min(0).optional(),
        dispatch_ms: z.number().int().min(0).optional(),
        execution_ms: z.number().int().min(0).optional(),
        finalize_ms: z.number().int().min(0).optional(),
      })
      .strict()
      .optional(),
  })
  .strict();
export const completeResponse = z.object({ accepted: z.boolean(), job_outcome: z.string() });

export const errorBody = z.object({ error: z.object({ code: z.string(), message: z.string() }) });
