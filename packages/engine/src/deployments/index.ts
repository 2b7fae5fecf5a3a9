// Deploy runs and deployment locks (issue 18, docs/adr/0033-deploy-runs-and-deployment-locks.md).
export { environmentOf, type DeployCaller, type EnvironmentRef } from "./environment-target.ts";
export {
  deployConfigBody,
  getDeployConfig,
  setDeployConfig,
  clearDeployConfig,
  setEnvironmentVariable,
  deleteEnvironmentVariable,
  type DeployConfigBody,
  type DeployConfigView,
} from "./deploy-config.ts";
export { setEnvironmentSecret, deleteEnvironmentSecret, listEnvironmentSecrets } from "./environment-secrets.ts";
export { startDeployment, type StartDeploymentResult } from "./start-deployment.ts";
export { settleDeploymentLocks, releaseDeploymentLock } from "./settle-locks.ts";
export { deploymentBindingOf } from "./deployment-binding.ts";
export { listDeployments, type LockView, type DeploymentView } from "./deployment-view.ts";
