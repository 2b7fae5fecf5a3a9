// What a deploy run's frozen definition gets from its deployment (issue 18, ADR 0033). Pure: the
// freeze passes the deployment's facts in. Configuration is bound at deploy time, never at build time
// (seed 002): the environment's variables, the promoted artifact pinned by generation id and digest,
// and the names of what is being deployed. The workflow author cannot unpin the artifact: the
// restore entry is added here, after parsing, and the control plane serves only that generation.
import type { WorkflowDefinition } from "../workflow/index.ts";

export interface DeploymentBinding {
  deploymentId: string;
  environment: string;
  generationId: string;
  /** Hex SHA-256 of the promoted artifact (the environment pointer's digest). */
  sha256: string;
  artifactName: string;
  /** Workspace-relative path the artifact is restored to. */
  artifactPath: string;
  variables: Record<string, string>;
}

/**
 * The restore entry's producer name. It must fit the agent protocol's name alphabet, which is the
 * job-name alphabet, so it is a reserved name rather than an impossible one: the pinned entry comes
 * first and the grant serves the first declared match, so a deploy job named so cannot unpin it.
 */
export const PROMOTED_FROM_JOB = "kiln.promoted";

export function bindDeployment(def: WorkflowDefinition, b: DeploymentBinding): WorkflowDefinition {
  const kiln = {
    KILN_ENVIRONMENT: b.environment,
    KILN_DEPLOYMENT_ID: b.deploymentId,
    KILN_ARTIFACT_NAME: b.artifactName,
    KILN_ARTIFACT_DIGEST: `sha256:${b.sha256}`,
    KILN_ARTIFACT_PATH: b.artifactPath,
  };
  return {
    ...def,
    jobs: def.jobs.map((j) => ({
      ...j,
      // The environment's variables win over the file's own values: they are the environment
      // owner's configuration, and the file is the author's.
      env: { ...j.env, ...b.variables, ...kiln },
      artifacts: {
        publish: j.artifacts.publish,
        restore: [
          {
            fromJob: PROMOTED_FROM_JOB,
            name: b.artifactName,
            path: b.artifactPath,
            promoted: { generationId: b.generationId, sha256: b.sha256 },
          },
          ...j.artifacts.restore,
        ],
      },
    })),
  };
}
