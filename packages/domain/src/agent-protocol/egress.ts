import { z } from "zod";

// ---- Mediated egress (issue 3, docs/adr/0013-mediated-egress.md). With the job token.
//   POST /v1/agent/jobs/{job_id}/egress-events  egressEventsRequest -> egressEventsResponse
// 409 ATTEMPT.STALE_EPOCH: a superseded epoch's report is refused (its sandbox is being destroyed).
export const egressEvent = z
  .object({
    host: z.string().min(1).max(255),
    port: z.number().int().min(0).max(65535),
    decision: z.enum(["allowed", "denied"]),
    reason: z.string().min(1).max(100),
    /** Identical destinations folded together since the last report. */
    count: z.number().int().min(1).max(1_000_000),
    at: z.iso.datetime(),
  })
  .strict();
export const egressEventsRequest = z
  .object({
    epoch: z.number().int().min(1),
    /** Per attempt, from 0; a retried report carries the same seq and records nothing twice. */
    batch_seq: z
      .number()
      .int()
      .min(0)
      .max(2 ** 31 - 1),
    events: z.array(egressEvent).min(1).max(500),
  })
  .strict();
export const egressEventsResponse = z.object({ recorded: z.number().int() });
