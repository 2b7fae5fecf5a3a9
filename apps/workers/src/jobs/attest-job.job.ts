import { attestJobs, OUTBOX_TOPICS, type AttestorDeps, type AttestPayload } from "@kiln/engine";
import type { Logger } from "@kiln/logger";
import { defineJob } from "./job-definition.ts";

/**
 * The attestor (issue 17, docs/adr/0027-control-plane-attestor.md): queued through the outbox by
 * the completion transaction of a successful job that bound artifacts. Signs the job's SLSA
 * provenance with the workers' key and appends it to the transparency log, a whole pg-boss fetch
 * at once (one transaction and one log lock per batch; ADR 0027 "Batches"). Idempotent: the
 * attestation id is derived from the job and epoch, the write happens under per-job locks after an
 * existence check, and the log keeps one leaf per dedupe key (run-it-twice test beside this). A job
 * that fails in a batch fails alone and is retried alone.
 */
export const attestJobJob = defineJob({
  name: "attest-job",
  payload: OUTBOX_TOPICS["attestation.create"].payload,
  retryLimit: 10,
  retryDelaySeconds: 1,
  expireInSeconds: 120,
  // Two batches in flight: one loads and signs (Node CPU) while the other writes (PostgreSQL).
  concurrency: 2,
  // Up to 64 jobs per fetch and transaction: at 200/s that is a fraction of a second of backlog.
  batchSize: 64,
  handle: async ({ runtime, log }, data) => {
    await runAttestJob((await runtime.attestor()).attestor, data, log);
  },
  handleBatch: async ({ runtime, log }, items) =>
    runAttestJobs(
      (await runtime.attestor()).attestor,
      items.map((i) => i.data),
      log,
    ),
});

/** The batch handler's body with its runtime passed in: one entry per payload, null or its error. */
export async function runAttestJobs(d: AttestorDeps, data: AttestPayload[], log: Logger): Promise<(Error | null)[]> {
  const outcomes = await attestJobs(
    d,
    data.map((x) => ({ jobId: x.jobId, epoch: x.epoch })),
  );
  return outcomes.map((r, i) => {
    const x = data[i]!;
    if (r.kind === "failed") return r.error;
    if (r.kind === "attested")
      log.info("job attested", {
        job_id: x.jobId,
        run_id: x.runId,
        attestation_id: r.attestationId,
        tlog_index: String(r.tlogIndex),
      });
    return null;
  });
}

/** One job (the run-it-twice test drives exactly this): its failure thrown. */
export async function runAttestJob(d: AttestorDeps, data: AttestPayload, log: Logger): Promise<void> {
  const [e] = await runAttestJobs(d, [data], log);
  if (e) throw e;
}
