// @kiln/engine/testing: the engine's test support for other workspaces' tests (the workers' job
// tests, for one): a cloned database per file, seeded tenants and frozen runs, a real S3 store for
// artifacts and logs, and the agent's side of the protocol done the way the agent does it.
export * from "./support.ts";
export * from "./artifacts/support.ts";
export * from "./logs/support.ts";
export * from "./attestation/support.ts";
export * from "./deployments/support.ts";
export * from "./shredding/support.ts";
