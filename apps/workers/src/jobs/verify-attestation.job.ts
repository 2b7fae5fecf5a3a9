import type { Db } from "@kiln/db";
import { OUTBOX_TOPICS, verifyAttestation, type ArtifactStore, type TlogPort } from "@kiln/engine";
import type { Logger } from "@kiln/logger";
import { defineJob } from "./job-definition.ts";

/**
 * The verifier (issue 17): re-checks each new attestation against the transparency log and the
 * bytes object storage holds; a mismatch quarantines the artifact. Until a signed checkpoint covers
 * the entry (seconds) the job fails and pg-boss retries it. Idempotent: the verdict is a guarded
 * update from `logged`, quarantine rows are insert-if-absent (run-it-twice test in attest-job.job.test.ts).
 */
export const verifyAttestationJob = defineJob({
  name: "verify-attestation",
  payload: OUTBOX_TOPICS["attestation.verify"].payload,
  retryLimit: 30,
  retryDelaySeconds: 2,
  expireInSeconds: 600,
  concurrency: 2,
  handle: async ({ db, runtime, log }, data) => {
    const rt = await runtime.attestor();
    await runVerifyAttestation({ db, store: rt.store, tlog: rt.attestor.tlog }, data.attestationId, log);
  },
});

/** The handler's body with its runtime passed in (the run-it-twice test gives its own). */
export async function runVerifyAttestation(
  d: { db: Db; store: ArtifactStore; tlog: TlogPort },
  attestationId: string,
  log: Logger,
): Promise<void> {
  const r = await verifyAttestation(d, attestationId);
  if (r.kind === "waiting_for_checkpoint") throw new Error("no signed checkpoint covers the entry yet");
  if (r.kind === "mismatch")
    log.warn("artifact quarantined", { attestation_id: attestationId, reason: r.reason, quarantined: r.quarantined });
}
