// Deploy-time configuration of an environment (issue 18, ADR 0033): the deploy workflow's path
// (read at the promoted artifact's commit), where the artifact lands, and plain variables. Set by
// org admins, each change audited in its own transaction; never read from the gated workflow file.
import { withTx, type Db, type DbOrTx } from "@kiln/db";
import {
  DomainError,
  envVariableNameProblem,
  MAX_ENV_VARIABLE_BYTES,
  MAX_ENV_VARIABLES,
  reservedEnvNameProblem,
} from "@kiln/domain";
import { z } from "zod";
import { recordAuditEvent } from "../audit/index.ts";
import { environmentOf, requireAdmin, type DeployCaller } from "./environment-target.ts";

const relativePath = z
  .string()
  .min(1)
  .max(500)
  .refine(
    (p) => !p.startsWith("/") && !p.split("/").includes("..") && !p.includes("\0"),
    "must be a relative path inside the repository",
  );

export const deployConfigBody = z
  .object({
    /** The deploy workflow, read at the promoted artifact's commit. */
    workflow_path: relativePath,
    /** Where the promoted artifact is restored in each deploy job (default .kiln/promoted/<name>). */
    artifact_path: relativePath.nullable().default(null),
  })
  .strict();
export type DeployConfigBody = z.infer<typeof deployConfigBody>;

export interface DeployConfigView {
  environment_id: string;
  workflow_path: string | null;
  artifact_path: string | null;
  updated_by: string | null;
  updated_at: string | null;
  variables: { name: string; value: string; updated_by: string; updated_at: string }[];
}

export async function getDeployConfig(
  db: DbOrTx,
  caller: DeployCaller,
  environmentId: string,
): Promise<DeployConfigView> {
  const env = await environmentOf(db, caller.orgId, environmentId);
  const cfg = await db.$queryRaw<
    { workflow_path: string; artifact_path: string | null; updated_by: string; updated_at: Date }[]
  >`SELECT workflow_path, artifact_path, updated_by, updated_at FROM environment_deploy_config
    WHERE environment_id = ${env.id}::uuid AND org_id = ${caller.orgId}::uuid`;
  const vars = await db.$queryRaw<{ name: string; value: string; updated_by: string; updated_at: Date }[]>`
    SELECT name, value, updated_by, updated_at FROM environment_variable
    WHERE environment_id = ${env.id}::uuid AND org_id = ${caller.orgId}::uuid ORDER BY name`;
  const c = cfg[0];
  return {
    environment_id: env.id,
    workflow_path: c?.workflow_path ?? null,
    artifact_path: c?.artifact_path ?? null,
    updated_by: c?.updated_by ?? null,
    updated_at: c?.updated_at.toISOString() ?? null,
    variables: vars.map((v) => ({ ...v, updated_at: v.updated_at.toISOString() })),
  };
}

export async function setDeployConfig(
  db: Db,
  caller: DeployCaller,
  environmentId: string,
  body: DeployConfigBody,
): Promise<DeployConfigView> {
  requireAdmin(caller, "configuring deploys");
  await withTx(db, "set-deploy-config", async (tx) => {
    const env = await environmentOf(tx, caller.orgId, environmentId);
    await tx.$executeRaw`
      INSERT INTO environment_deploy_config (environment_id, org_id, workflow_path, artifact_path, updated_by)
      VALUES (${env.id}::uuid, ${env.orgId}::uuid, ${body.workflow_path}, ${body.artifact_path}, ${caller.actor})
      ON CONFLICT (environment_id) DO UPDATE SET workflow_path = EXCLUDED.workflow_path,
        artifact_path = EXCLUDED.artifact_path, updated_by = EXCLUDED.updated_by, updated_at = now()`;
    await recordAuditEvent(tx, {
      orgId: env.orgId,
      kind: "environment.deploy_config_set",
      actor: caller.actor,
      subject: env.id,
      data: { environment_id: env.id, environment: env.name, ...body },
    });
  });
  return getDeployConfig(db, caller, environmentId);
}

export async function clearDeployConfig(db: Db, caller: DeployCaller, environmentId: string): Promise<void> {
  requireAdmin(caller, "configuring deploys");
  await withTx(db, "clear-deploy-config", async (tx) => {
    const env = await environmentOf(tx, caller.orgId, environmentId);
    const n = await tx.$executeRaw`
      DELETE FROM environment_deploy_config WHERE environment_id = ${env.id}::uuid AND org_id = ${env.orgId}::uuid`;
    if (n === 0) throw new DomainError("DEPLOY.CONFIG_NOT_FOUND", "this environment has no deploy workflow");
    await recordAuditEvent(tx, {
      orgId: env.orgId,
      kind: "environment.deploy_config_cleared",
      actor: caller.actor,
      subject: env.id,
      data: { environment_id: env.id, environment: env.name },
    });
  });
}

export async function setEnvironmentVariable(
  db: Db,
  caller: DeployCaller,
  environmentId: string,
  input: { name: string; value: string },
): Promise<{ name: string; value: string }> {
  requireAdmin(caller, "setting deploy variables");
  const reserved = reservedEnvNameProblem(input.name);
  if (reserved)
    throw new DomainError("WORKFLOW.ENV_NAME_RESERVED", `variable name ${JSON.stringify(input.name)} ${reserved}`);
  const problem = envVariableNameProblem(input.name);
  if (problem)
    throw new DomainError("DEPLOY.VARIABLE_INVALID", `variable name ${JSON.stringify(input.name)} ${problem}`);
  if (Buffer.byteLength(input.value, "utf8") > MAX_ENV_VARIABLE_BYTES || input.value.includes("\0"))
    throw new DomainError(
      "DEPLOY.VARIABLE_INVALID",
      `a variable's value is at most ${MAX_ENV_VARIABLE_BYTES} bytes, without NUL`,
    );
  return withTx(db, "set-environment-variable", async (tx) => {
    const env = await environmentOf(tx, caller.orgId, environmentId);
    // Counted under a per-environment lock so two concurrent sets cannot both pass the limit.
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext('env-vars:' || ${env.id}))`;
    const count = await tx.$queryRaw<{ n: bigint; has: boolean }[]>`
      SELECT count(*) AS n, bool_or(name = ${input.name}) AS has FROM environment_variable WHERE environment_id = ${env.id}::uuid`;
    if (!count[0]?.has && Number(count[0]?.n ?? 0) >= MAX_ENV_VARIABLES)
      throw new DomainError("DEPLOY.TOO_MANY_VARIABLES", `an environment has at most ${MAX_ENV_VARIABLES} variables`);
    await tx.$executeRaw`
      INSERT INTO environment_variable (environment_id, org_id, name, value, updated_by)
      VALUES (${env.id}::uuid, ${env.orgId}::uuid, ${input.name}, ${input.value}, ${caller.actor})
      ON CONFLICT (environment_id, name) DO UPDATE SET value = EXCLUDED.value, updated_by = EXCLUDED.updated_by, updated_at = now()`;
    // Variables are not secrets: the value is part of the record, so a change can be reviewed.
    await recordAuditEvent(tx, {
      orgId: env.orgId,
      kind: "environment.variable_set",
      actor: caller.actor,
      subject: `${env.id}:${input.name}`,
      data: { environment_id: env.id, environment: env.name, name: input.name, value: input.value },
    });
    return { name: input.name, value: input.value };
  });
}

export async function deleteEnvironmentVariable(
  db: Db,
  caller: DeployCaller,
  environmentId: string,
  name: string,
): Promise<void> {
  requireAdmin(caller, "deleting deploy variables");
  await withTx(db, "delete-environment-variable", async (tx) => {
    const env = await environmentOf(tx, caller.orgId, environmentId);
    const n = await tx.$executeRaw`
      DELETE FROM environment_variable WHERE environment_id = ${env.id}::uuid AND org_id = ${env.orgId}::uuid AND name = ${name}`;
    if (n === 0) throw new DomainError("DEPLOY.VARIABLE_NOT_FOUND", `no variable ${name} here`);
    await recordAuditEvent(tx, {
      orgId: env.orgId,
      kind: "environment.variable_deleted",
      actor: caller.actor,
      subject: `${env.id}:${name}`,
      data: { environment_id: env.id, environment: env.name, name },
    });
  });
}
