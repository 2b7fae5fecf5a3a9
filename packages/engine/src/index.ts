export { DEFAULT_ENGINE_CONFIG, type EngineConfig } from "./shared/config.ts";
export {
  engineEnvSchema,
  engineConfigFromEnv,
  objectStoreConfigFromEnv,
  artifactSettingsFromEnv,
  cacheSettingsFromEnv,
  logConfigFromEnv,
  type EngineEnv,
} from "./shared/engine-env.ts";
export type { DispatchPayload, FreezePayload, OutboxTopic } from "./shared/journal.ts";
export { admitGithubWebhook, type WebhookResult } from "./webhooks/admit-webhook.ts";
export { verifyGithubSignature } from "./webhooks/verify-signature.ts";
export { admitManualRun, manualTriggerBody, type Caller, type ManualTriggerBody } from "./runs/admit-manual.ts";
export { pinImages, resolveImage, type PinImagesResult, type ResolveImageResult } from "./images/index.ts";
export { freezeRun, DEFAULT_POOL, type FreezeOutcome } from "./runs/freeze-run.ts";
export { cancelRun } from "./runs/cancel-run.ts";
export { retryRun } from "./runs/retry-run.ts";
export { getRun, type RunView, type JobView } from "./runs/get-run.ts";
export { claimJob, type ClaimRequest, type ClaimResult, type JobTicket } from "./dispatch/claim-job.ts";
export { relayOutbox, nextDeferredDelayMs, type OutboxMessage } from "./dispatch/relay-outbox.ts";
export { registerSession } from "./dispatch/register-session.ts";
export { heartbeat, type HeartbeatResult } from "./attempts/heartbeat.ts";
export { completeAttempt, type CompletionReport, type CompletionResult } from "./attempts/complete-attempt.ts";
export { reconcile, type ReconcileReport } from "./attempts/reconcile.ts";
export {
  authenticateApiToken,
  authenticateAgentToken,
  authenticateJobToken,
  agentCredentialHash,
} from "./identity/authenticate.ts";
export {
  newSecret,
  hashSecret,
  platformKey,
  signJobToken,
  verifyJobToken,
  checkJobToken,
  jobTokenKeyring,
  rotateJobTokenKey,
  JOB_TOKEN_TTL_MS,
  type SigningKey,
  type JobTokenKeyring,
} from "./identity/tokens.ts";
export { listApiTokens, revokeApiToken, type ApiTokenView } from "./identity/api-tokens.ts";
export { listAgentTokens, revokeAgentToken, type AgentTokenView } from "./identity/agent-tokens.ts";
export { fetchWorkflowFile } from "./source/fetch-workflow.ts";
export { createOrg, addRepo, addMember, createApiToken, createAgentToken } from "./tenants/admin.ts";
export { createObjectStore, type ObjectStoreConfig } from "./storage/index.ts";
export {
  DEFAULT_ARTIFACT_SETTINGS,
  openUpload,
  recordPart,
  finalizeUpload,
  grantDownload,
  listJobArtifacts,
  artifactDownloadUrl,
  collectArtifactGarbage,
  type ArtifactSettings,
  type ArtifactStore,
  type JobClaims,
  type OpenUploadRequest,
  type UploadSession,
  type PartReport,
  type SealedArtifact,
  type DownloadGrant,
  type JobArtifactView,
  type ArtifactGcReport,
} from "./artifacts/index.ts";
export {
  DEFAULT_LOG_CONFIG,
  appendLogChunks,
  sealLog,
  endUnsealedLog,
  authorizeLogRead,
  loadLogHead,
  LogHeadCache,
  readLogChunks,
  readStreamBytes,
  s3LogStore,
  LogArchiveReader,
  archiveLogs,
  LogHub,
  LogPublisher,
  logChannel,
  followJobLog,
  type LogConfig,
  type SqlPool,
  type SqlClient,
  type IncomingChunk,
  type AppendResult,
  type LogWriter,
  type LogOwner,
  type LogReadGrant,
  type LogHead,
  type LogObjectStore,
  type LogChunkRecord,
  type ArchiveReport,
  type LiveLogMessage,
  type LiveChunk,
  type PublishedLogMessage,
  type LogFollowerDeps,
  type FollowRequest,
} from "./logs/index.ts";
export {
  setEntitlement,
  setEntitlementAsPlatformAdmin,
  lowerOwnHardCap,
  listEntitlements,
  type EntitlementRow,
} from "./tenants/entitlements.ts";
export { setPlatformAdmin, listPlatformAdmins, isPlatformAdmin } from "./tenants/platform-admins.ts";
export { loadPoolState, rankCandidates } from "./dispatch/pool-snapshot.ts";
export { queueInfoForRun, type QueueInfo } from "./dispatch/queue-view.ts";
export * from "./views/index.ts";
export * from "./egress/index.ts";
export * from "./caches/index.ts";
export {
  setPoolPolicy,
  listPools,
  poolPolicyFromRow,
  type PoolView,
  type SetPoolInput,
} from "./dispatch/pool-policy.ts";
