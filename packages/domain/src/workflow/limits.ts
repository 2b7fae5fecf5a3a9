export const WORKFLOW_LIMITS = {
  maxBytes: 256 * 1024,
  maxDepth: 32,
  maxJobs: 256,
  maxStepsPerJob: 256,
  // Zero means aliases and anchors are rejected outright: there is no legitimate
  // use in a workflow file, and refusing them removes billion-laughs expansion.
  maxAliasCount: 0,
  maxNameLength: 100,
  maxStepLength: 16 * 1024,
  maxEnvVars: 128,
  maxTimeoutMinutes: 24 * 60,
  maxSecretsPerJob: 100,
} as const;
