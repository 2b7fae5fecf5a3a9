import { z } from "zod";
import { OUTCOMES } from "../runs/outcomes.ts";

// The agent <-> control-plane contract, shared by both sides (conventions rule 10). Paths:
//   POST /v1/agent/sessions               host credential  registerSessionRequest -> registerSessionResponse (201)
//   POST /v1/agent/claims                 host credential  claimRequest -> jobTicket (200) | 204 no work
//   POST /v1/agent/jobs/{job_id}/heartbeat job token       heartbeatRequest -> heartbeatResponse | 409 stale
//   POST /v1/agent/jobs/{job_id}/complete  job token       completeRequest -> completeResponse | 409 refused
// Errors are {error: {code, message}}; 409 ATTEMPT.STALE_EPOCH / ATTEMPT.LEASE_EXPIRED mean
// "destroy the sandbox now, publish nothing".

export const registerSessionRequest = z
  .object({
    hostname: z.string().min(1).max(200),
    capacity: z.number().int().min(1).max(1024),
    labels: z
      .object({
        os: z.string().max(50),
        arch: z.string().max(50),
        resource_class: z.string().max(50),
        isolation: z.enum(["microvm", "process"]),
      })
      .strict(),
  })
  .strict();
export const registerSessionResponse = z.object({
  session_id: z.string(),
  pool: z.string(),
  lease_ttl_ms: z.number(),
  heartbeat_ms: z.number(),
});

export const claimRequest = z
  .object({
    session_id: z.string().uuid(),
    claim_request_id: z.string().min(8).max(100),
    wait_ms: z.number().int().min(0).max(30_000).default(0),
  })
  .strict();

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
  source: z.object({ cloneUrl: z.string(), commitSha: z.string() }),
  job: z.object({
    name: z.string(),
    index: z.number().int(),
    image: z.string().nullable(),
    steps: z.array(z.string()),
    env: z.record(z.string(), z.string()),
    timeoutMinutes: z.number(),
    artifacts: z.object({
      publish: z.array(z.object({ name: z.string(), path: z.string() })),
      restore: z.array(z.object({ fromJob: z.string(), name: z.string(), path: z.string() })),
    }),
  }),
});
export type JobTicketWire = z.infer<typeof jobTicket>;

export const heartbeatRequest = z
  .object({
    epoch: z.number().int().min(1),
    phase: z
      .object({ image_ms: z.number().int().min(0).optional(), dispatch_ms: z.number().int().min(0).optional(), started: z.boolean().optional() })
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
