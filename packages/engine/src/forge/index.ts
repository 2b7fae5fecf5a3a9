// Public API of the forge capability (conventions 4): statuses back to the forge, missed
// deliveries, pull-request cancellation, per-repo forge credentials (docs/adr/0028).
export { type ForgeConfig, DEFAULT_FORGE_CONFIG, kilnWebhookUrl } from "./forge-config.ts";
export { parseSecretsKey, sealSecret, openSecret, type SecretsKey } from "./secret-box.ts";
export { ForgeApiError, forgeRequest, rateLimitWait, type ForgeResponse } from "./github-api.ts";
export { createAppJwt, InstallationTokens } from "./app-auth.ts";
export { deliverRunStatuses, runsWithUndeliveredStatuses, type DeliveryReport } from "./deliver-statuses.ts";
export { reconcileForgeDeliveries, FORGE_DELIVERY_RETENTION_MS, type HookReport } from "./reconcile-deliveries.ts";
export { setRepoForge, getRepoForge, findRepoByName, type RepoForgeView } from "./repo-forge.ts";
export { listRunForgeStatuses, type ForgeStatusView } from "./run-forge.ts";
export { proveRepoControl, repoInstallationId } from "./forge-identity.ts";
export { forgeCredentialForFetch, issueSourceCredential, type SourceCredentialAnswer } from "./source-credential.ts";
