import { withTx, type Db } from "@kiln/db";
import { defaultPolicy, DomainError, isProduction } from "@kiln/domain";
import { recordAuditEvent } from "../audit/index.ts";
import { recordTransition } from "../shared/journal.ts";
import { requireAdmin, UUID, type EnvActor } from "./env-actor.ts";
import { envView, loadEnvironment, type EnvironmentView } from "./environment-store.ts";

const NAME = /^[a-z0-9][a-z0-9._-]{0,62}$/;

export interface CreateEnvironmentInput {
  repoId: string;
  name: string;
  /** The environment this one comes after (its previous environment), by name. */
  after?: string | null;
  /** Marked production (an environment named `production` is production anyway). */
  production?: boolean;
}

/**
 * An org admin creates an environment with the default policy as version 1, in one
 * transaction with its audit record and its first event.
 */
export async function createEnvironment(
  db: Db,
  actor: EnvActor,
  input: CreateEnvironmentInput,
): Promise<EnvironmentView> {
  requireAdmin(actor, "create environments");
  if (!NAME.test(input.name))
    throw new DomainError(
      "ENV.INVALID",
      "an environment name is 1-63 of a-z, 0-9, '.', '_', '-', starting with a letter or digit",
    );
  if (!UUID.test(input.repoId)) throw new DomainError("REPO.NOT_FOUND", "no such repo");
  return withTx(db, "create-environment", async (tx) => {
    const repo = await tx.$queryRaw<{ id: string }[]>`
      SELECT id FROM repo WHERE id = ${input.repoId}::uuid AND org_id = ${actor.orgId}::uuid FOR SHARE`;
    if (!repo[0]) throw new DomainError("REPO.NOT_FOUND", "no such repo");
    let afterId: string | null = null;
    let position = 0;
    if (input.after) {
      const a = await tx.$queryRaw<{ id: string; position: number }[]>`
        SELECT id, position FROM environment WHERE repo_id = ${input.repoId}::uuid AND name = ${input.after}`;
      if (!a[0]) throw new DomainError("ENV.NOT_FOUND", `no environment ${input.after} in this repo to come after`);
      afterId = a[0].id;
      position = a[0].position + 1;
    }
    const production = isProduction({ name: input.name, production: input.production ?? false });
    const policy = defaultPolicy({ name: input.name, production, hasPrevious: afterId !== null });
    const inserted = await tx.$queryRaw<{ id: string }[]>`
      INSERT INTO environment (org_id, repo_id, name, after_id, position, production, fail_mode, policy_version, created_by)
      VALUES (${actor.orgId}::uuid, ${input.repoId}::uuid, ${input.name}, ${afterId}::uuid, ${position}, ${production},
              'closed', 1, ${actor.actor})
      ON CONFLICT (repo_id, name) DO NOTHING RETURNING id`;
    const id = inserted[0]?.id;
    if (!id) throw new DomainError("ENV.EXISTS", `the repo already has an environment ${input.name}`);
    await tx.$executeRaw`
      INSERT INTO environment_policy (environment_id, version, org_id, policy, created_by, comment)
      VALUES (${id}::uuid, 1, ${actor.orgId}::uuid, ${JSON.stringify(policy)}::jsonb, ${actor.actor}, 'default policy')`;
    const facts = {
      environmentId: id,
      repoId: input.repoId,
      name: input.name,
      after: input.after ?? null,
      production,
      policyVersion: 1,
      policy,
    };
    await recordTransition(tx, {
      orgId: actor.orgId,
      entity: "environment",
      from: null,
      to: "created",
      reason: "created",
      data: facts,
    });
    await recordAuditEvent(tx, {
      orgId: actor.orgId,
      kind: "environment.created",
      actor: actor.actor,
      subject: id,
      data: facts,
    });
    return envView(await loadEnvironment(tx, actor.orgId, id));
  });
}
