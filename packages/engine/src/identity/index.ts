// Public API of the identity capability (conventions 4).
export {
  authenticateApiToken,
  authenticateAgentToken,
  authenticateJobToken,
  agentCredentialHash,
} from "./authenticate.ts";
export { newSecret, hashSecret, signJobToken, verifyJobToken, checkJobToken } from "./tokens.ts";
export {
  bindJobTokenKek,
  platformKey,
  jobTokenKeyring,
  rotateJobTokenKey,
  JOB_TOKEN_TTL_MS,
  type SigningKey,
  type JobTokenKeyring,
} from "./job-token-keys.ts";
export { listApiTokens, revokeApiToken, type ApiTokenView } from "./api-tokens.ts";
export { listAgentTokens, revokeAgentToken, type AgentTokenView } from "./agent-tokens.ts";
// Workload identity (issue 16, ADR 0024): OIDC ID tokens for jobs.
export { readIdentityKek, loadOrCreateIdentityKek, kekFromBytes, type IdentityKek } from "./identity-kek.ts";
export { idTokenJwks, listIdTokenKeys, rotateIdTokenKey, type PublishedKey } from "./id-token-keys.ts";
export { mintIdToken, type MintedIdToken } from "./mint-id-token.ts";
export { pruneIdTokens } from "./prune-id-tokens.ts";
export { verifyIdToken, introspectIdToken, type IdTokenVerdict, type IdTokenRefusal } from "./verify-id-token.ts";
export { setUntrustedIdTokens } from "./untrusted-id-tokens.ts";
