import { verifyAttestation } from "@kiln/engine";
import { z } from "zod";
import { attestorRuntimeFromEnv } from "./attestor-runtime.ts";
import { defineJob } from "./job-definition.ts";

/**
 * The verifier (issue 17): re-checks each new attestation against the transparency log and the
 * bytes object storage holds; a mismatch quarantines the artifact. Until a signed checkpoint covers
 * the entry (seconds) the job fails and pg-boss retries it. Idempotent: the verdict is a guarded
 * update from `logged`, quarantine rows are insert-if-absent (run-it-twice test beside this).
 */
export const verifyAttestationJob = defineJob({
  name: "verify-attestation",
  payload: z.object({ attestationId: z.uuid() }),
  retryLimit: 30,
  retryDelaySeconds: 2,
  expireInSeconds: 600,
  concurrency: 2,
  handle: async ({ db, log }, data) => {
    const rt = await attestorRuntimeFromEnv(db, log);
    const r = await verifyAttestation({ db, store: rt.store, tlog: rt.attestor.tlog }, data.attestationId);
    if (r.kind === "waiting_for_checkpoint") throw new Error("no signed checkpoint covers the entry yet");
    if (r.kind === "mismatch")
      log.warn("artifact quarantined", { attestation_id: data.attestationId, reason: r.reason, quarantined: r.quarantined });
  },
});
