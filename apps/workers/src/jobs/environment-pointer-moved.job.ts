import { OUTBOX_TOPICS, startDeployment } from "@kiln/engine";
import { defineJob } from "./job-definition.ts";

/**
 * The deployer (issue 18, docs/adr/0033): an environment's pointer moved, so its deploy run starts
 * for exactly that move (or waits for the environment's deployment lock). Idempotent by
 * (environment, pointer_seq): a repeated delivery finds its deployment and changes nothing
 * (run-it-twice test beside this file). An environment without a deploy workflow is a no-op.
 */
export const environmentPointerMovedJob = defineJob({
  name: "environment-pointer-moved",
  payload: OUTBOX_TOPICS["environment.pointer_moved"].payload,
  retryLimit: 10,
  retryDelaySeconds: 1,
  retryDelayMaxSeconds: 30,
  expireInSeconds: 60,
  handle: async ({ db, log }, data) => {
    const r = await startDeployment(db, { environmentId: data.environmentId, pointerSeq: BigInt(data.pointerSeq) });
    log.info("pointer move consumed", {
      queue: environmentPointerMovedJob.name,
      environment_id: data.environmentId,
      pointer_seq: data.pointerSeq,
      result: r.kind,
      ...("deploymentId" in r ? { deployment_id: r.deploymentId } : {}),
      ...("runId" in r ? { run_id: r.runId } : {}),
    });
  },
});
