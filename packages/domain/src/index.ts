export * from "./shared/errors.ts";
export * from "./shared/env-names.ts";
export * from "./runs/index.ts";
export * from "./attempts/index.ts";
export * from "./tenants/index.ts";
export * from "./workflow/index.ts";
export * from "./artifacts/index.ts";
export * from "./logs/index.ts";
export * from "./egress/index.ts";
export * from "./caches/index.ts";
export * from "./retention/index.ts";
export * from "./identity/index.ts";
export * as agentProtocol from "./agent-protocol/index.ts";
export {
  AGENT_ENDPOINTS,
  agentEndpointPath,
  matchAgentEndpoint,
  type AgentAuth,
  type AgentEndpoint,
  type AgentEndpointName,
} from "./agent-protocol/endpoints.ts";
export * as dispatch from "./dispatch/index.ts";
// Placement is read by the claim, the queue view and the agent protocol, so its names are top-level.
export * from "./dispatch/placement.ts";
export * from "./forge/index.ts";
export * from "./schedules/index.ts";
export * from "./dispatch/runner-sizes.ts";
export * from "./attestation/provenance/index.ts";
export * from "./secrets/index.ts";
export * from "./environments/index.ts";
export * as tlog from "./attestation/tlog/index.ts";
export * from "./runners/index.ts";
export * from "./shredding/index.ts";
export * from "./deployments/index.ts";
