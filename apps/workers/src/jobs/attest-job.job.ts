import { attestJob, type AttestorDeps } from "@kiln/engine";
import type { Logger } from "@kiln/logger";
import { z } from "zod";
import { attestorRuntimeFromEnv } from "./attestor-runtime.ts";
import { defineJob } from "./job-definition.ts";

/**
 * The attestor (issue 17, docs/adr/0027-control-plane-attestor.md): queued through the outbox by
 * the completion transaction of a successful job that bound artifacts. Signs the job's SLSA
 * provenance with the workers' key and appends it to the transparency log. Idempotent: the
 * attestation id is derived from the job and epoch, the write happens under a per-job lock after
 * an existence check, and the log keeps one leaf per dedupe key (run-it-twice test beside this).
 */
const payload = z.object({
  jobId: z.uuid(),
  runId: z.uuid(),
  orgId: z.uuid(),
  epoch: z.number().int().min(1),
});

export const attestJobJob = defineJob({
  name: "attest-job",
  payload,
  retryLimit: 10,
  retryDelaySeconds: 1,
  expireInSeconds: 120,
  concurrency: 4,
  handle: async ({ db, log }, data) => {
    await runAttestJob((await attestorRuntimeFromEnv(db, log)).attestor, data, log);
  },
});

/** The handler's body with its runtime passed in (the run-it-twice test gives its own). */
export async function runAttestJob(d: AttestorDeps, data: z.infer<typeof payload>, log: Logger): Promise<void> {
  const r = await attestJob(d, { jobId: data.jobId, epoch: data.epoch });
  if (r.kind === "attested")
    log.info("job attested", {
      job_id: data.jobId,
      run_id: data.runId,
      attestation_id: r.attestationId,
      tlog_index: String(r.tlogIndex),
    });
}
