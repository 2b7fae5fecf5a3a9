export {
  DEPLOYMENT_STATES,
  LOCK_RELEASE_REASONS,
  DEPLOY_TRIGGER,
  ENV_VARIABLE_NAME,
  MAX_ENV_VARIABLES,
  MAX_ENV_VARIABLE_BYTES,
  envVariableNameProblem,
  decideLockRelease,
  deploymentStateOf,
  defaultArtifactPath,
  type DeploymentState,
  type LockReleaseReason,
  type DeployAttemptFacts,
  type LockDecision,
} from "./deployment-rules.ts";
export { bindDeployment, PROMOTED_FROM_JOB, type DeploymentBinding } from "./bind-deployment.ts";
