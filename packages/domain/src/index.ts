export * from "./shared/errors.ts";
export * from "./runs/outcomes.ts";
export * from "./runs/run-state-machine.ts";
export * from "./runs/job-graph.ts";
export * from "./runs/git-ref.ts";
export * from "./runs/run-filters.ts";
export * from "./attempts/attempt-decisions.ts";
export * from "./attempts/retry-policy.ts";
export * from "./tenants/trust-class.ts";
export * from "./workflow/index.ts";
export * from "./artifacts/index.ts";
export * from "./logs/index.ts";
export * from "./egress/index.ts";
export * from "./caches/index.ts";
export * as agentProtocol from "./agent-protocol/index.ts";
export * as dispatch from "./dispatch/index.ts";
// Placement is read by the claim, the queue view and the agent protocol, so its names are top-level.
export * from "./dispatch/placement.ts";
