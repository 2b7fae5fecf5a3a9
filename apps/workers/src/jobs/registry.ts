import { archiveLogsJob } from "./archive-logs.job.ts";
import { attestJobJob } from "./attest-job.job.ts";
import { evictCachesJob } from "./evict-caches.job.ts";
import { enforceRetentionJob } from "./enforce-retention.job.ts";
import { forgeReconcileJob } from "./forge-reconcile.job.ts";
import { forgeStatusJob } from "./forge-status.job.ts";
import { freezeRunJob } from "./freeze-run.job.ts";
import { gcArtifactsJob } from "./gc-artifacts.job.ts";
import { pruneIdTokensJob } from "./prune-id-tokens.job.ts";
import { reconcileJob } from "./reconcile.job.ts";
import { rotateJobTokenKeyJob } from "./rotate-job-token-key.job.ts";
import { runSchedulesJob } from "./run-schedules.job.ts";
import { verifyAttestationJob } from "./verify-attestation.job.ts";
import { signTlogCheckpointJob } from "./sign-tlog-checkpoint.job.ts";
import { destroyShredKeysJob } from "./destroy-shred-keys.job.ts";
import { sampleDeletionsJob } from "./sample-deletions.job.ts";
import { resealArtifactsJob } from "./reseal-artifacts.job.ts";
import { redecideSoakingPromotionsJob } from "./redecide-soaking-promotions.job.ts";
import { environmentPointerMovedJob } from "./environment-pointer-moved.job.ts";

/** Every pg-boss job the workers run. */
export const JOBS = [
  freezeRunJob,
  reconcileJob,
  gcArtifactsJob,
  archiveLogsJob,
  evictCachesJob,
  enforceRetentionJob,
  rotateJobTokenKeyJob,
  forgeStatusJob,
  forgeReconcileJob,
  runSchedulesJob,
  attestJobJob,
  verifyAttestationJob,
  pruneIdTokensJob,
  signTlogCheckpointJob,
  destroyShredKeysJob,
  sampleDeletionsJob,
  resealArtifactsJob,
  redecideSoakingPromotionsJob,
  environmentPointerMovedJob,
] as const;
