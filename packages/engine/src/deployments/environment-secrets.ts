// Environment-scoped secrets (issue 18, ADR 0033): the same envelope, store and broker as org and
// repo secrets (ADR 0025), under scope `env:<environment_id>`. The broker delivers them only to a
// deploy run of that very environment; a branch build of the same repo never sees them.
import type { Db, DbOrTx } from "@kiln/db";
import {
  deleteSecret,
  listSecrets,
  setSecret,
  type KekSource,
  type SecretTarget,
  type SecretView,
} from "../secrets/index.ts";
import { environmentOf, requireAdmin, type DeployCaller } from "./environment-target.ts";

async function envTarget(db: DbOrTx, caller: DeployCaller, environmentId: string): Promise<SecretTarget> {
  const env = await environmentOf(db, caller.orgId, environmentId);
  return { orgId: env.orgId, repoId: env.repoId, scope: `env:${env.id}`, environmentId: env.id };
}

export async function setEnvironmentSecret(
  db: Db,
  keks: KekSource,
  caller: DeployCaller,
  environmentId: string,
  input: { name: string; value: string },
): Promise<SecretView> {
  requireAdmin(caller, "managing secrets");
  const target = await envTarget(db, caller, environmentId);
  return setSecret(db, keks, { target, name: input.name, value: input.value, actor: caller.actor });
}

export async function deleteEnvironmentSecret(
  db: Db,
  caller: DeployCaller,
  environmentId: string,
  name: string,
): Promise<{ name: string; scope: string; version: number }> {
  requireAdmin(caller, "managing secrets");
  const target = await envTarget(db, caller, environmentId);
  return deleteSecret(db, { target, name, actor: caller.actor });
}

/** Names and versions only, never values; any member may see which secrets an environment has. */
export async function listEnvironmentSecrets(
  db: DbOrTx,
  caller: DeployCaller,
  environmentId: string,
): Promise<SecretView[]> {
  const target = await envTarget(db, caller, environmentId);
  return listSecrets(db, { orgId: target.orgId, scope: target.scope });
}
