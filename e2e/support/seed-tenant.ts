import type { Db } from "@kiln/db";
import { addMember, addRepo, createAgentToken, createApiToken, createOrg } from "@kiln/engine";
import type { TestGitServer } from "@kiln/testkit";

/**
 * The forge user id the fixtures give a member login (members and webhook senders are matched by
 * it, never by login): stable per login, so a test's webhook sender can carry the member's id.
 */
export function forgeIdOf(login: string): number {
  let h = 0;
  for (const ch of login) h = (h * 31 + ch.charCodeAt(0)) % 90_000_000;
  return 10_000_000 + h;
}

/** An org with a repository on the git server, an API token, a host credential for the default pool. */
export async function seedTenant(
  db: Db,
  git: TestGitServer,
  slug: string,
  files: Record<string, string>,
  opts: { member?: string; secret?: string; workflowPath?: string } = {},
) {
  await createOrg(db, slug);
  const repo = await git.createRepo(`${slug}.git`, files);
  const secret = opts.secret ?? `${slug}-secret`;
  const r = await addRepo(
    db,
    {
      orgSlug: slug,
      name: `${slug}/app`,
      cloneUrl: repo.cloneUrl,
      webhookSecret: secret,
      workflowPath: opts.workflowPath ?? ".kiln/workflow.yaml",
    },
    git.sourcePolicy,
  );
  if (opts.member)
    await addMember(db, { orgSlug: slug, login: opts.member, role: "member", forgeId: forgeIdOf(opts.member) });
  const token = await createApiToken(db, { orgSlug: slug, role: "member" });
  const agent = await createAgentToken(db, { pool: "default" });
  return { repoId: r.id, repoName: `${slug}/app`, git: repo, secret, token: token.token, agentToken: agent.token };
}

export type SeededTenant = Awaited<ReturnType<typeof seedTenant>>;
