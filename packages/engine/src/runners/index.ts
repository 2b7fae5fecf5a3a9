// Runners an org owns (issue 22, docs/adr/0034): registration, the fleet's hosts, host health.
export {
  createRegistrationToken,
  registerRunner,
  type RegistrationTokenView,
  type RegistrationInput,
  type Registration,
} from "./registration.ts";
export {
  listRunners,
  applyRunnerAction,
  type RunnerView,
  type RunnerActionInput,
} from "./runners.ts";
export { quarantineHostIfUnhealthy } from "./health.ts";
export { createOrgPool, listOrgPools, type OrgPoolView } from "./org-pools.ts";
