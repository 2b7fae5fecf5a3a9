// What a deploy run's freeze binds into its definition (issue 18, ADR 0033): read when the deploy
// run freezes, so the environment's configuration is the one at deploy time, then frozen with the
// run like every other field (a later change of a variable does not alter a running deploy).
import type { DbOrTx } from "@kiln/db";
import { defaultArtifactPath, type DeploymentBinding } from "@kiln/domain";

export async function deploymentBindingOf(db: DbOrTx, runId: string): Promise<DeploymentBinding | null> {
  const rows = await db.$queryRaw<
    {
      id: string;
      environment: string;
      generation_id: string;
      digest: string;
      artifact_name: string;
      artifact_path: string | null;
      variables: Record<string, string> | null;
    }[]
  >`
    SELECT d.id, e.name AS environment, d.generation_id, d.digest, g.name AS artifact_name,
           c.artifact_path,
           (SELECT jsonb_object_agg(v.name, v.value) FROM environment_variable v WHERE v.environment_id = d.environment_id) AS variables
    FROM deployment d
    JOIN environment e ON e.id = d.environment_id
    JOIN artifact_generation g ON g.id = d.generation_id
    LEFT JOIN environment_deploy_config c ON c.environment_id = d.environment_id
    WHERE d.run_id = ${runId}::uuid`;
  const r = rows[0];
  if (!r) return null;
  return {
    deploymentId: r.id,
    environment: r.environment,
    generationId: r.generation_id,
    sha256: r.digest,
    artifactName: r.artifact_name,
    artifactPath: r.artifact_path ?? defaultArtifactPath(r.artifact_name),
    variables: r.variables ?? {},
  };
}
