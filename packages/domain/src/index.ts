export * from "./shared/errors.ts";
export * from "./runs/outcomes.ts";
export * from "./runs/run-state-machine.ts";
export * from "./runs/job-graph.ts";
export * from "./attempts/attempt-decisions.ts";
export * from "./attempts/retry-policy.ts";
export * from "./tenants/trust-class.ts";
export * from "./workflow/index.ts";
export * as agentProtocol from "./agent-protocol/index.ts";
