// Public API of the identity capability (conventions 4).
export {
  authenticateApiToken,
  authenticateAgentToken,
  authenticateJobToken,
  agentCredentialHash,
} from "./authenticate.ts";
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
} from "./tokens.ts";
export { listApiTokens, revokeApiToken, type ApiTokenView } from "./api-tokens.ts";
export { listAgentTokens, revokeAgentToken, type AgentTokenView } from "./agent-tokens.ts";
