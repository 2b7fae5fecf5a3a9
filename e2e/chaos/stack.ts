// The chaos soak's stack: @kiln/testkit's platform (its own embedded PostgreSQL, Redis, the S3 store,
// a git server; web, workers and agents as separate OS processes that can be SIGKILLed or SIGSTOPped
// by pid and restarted as they were) with short leases, plus seeding a tenant.
import { addRepo, createAgentToken, createApiToken, createOrg } from "@kiln/engine";
import { FAST_LEASES_ENV, Platform, type TestGitServer } from "@kiln/testkit";

export class Stack extends Platform {
  constructor(opts: { env?: Record<string, string> } = {}) {
    super({
      env: { ...FAST_LEASES_ENV, ...opts.env },
      git: true,
      agentEnv: { KILN_SANDBOX_DRIVER: "process", KILN_AGENT_SLOTS: "2", KILN_CLAIM_WAIT_MS: "2000" },
      agentHostnames: true,
      // The workload's pushes come from a non-member (untrusted runs) and its agents are process
      // agents: one operator's development pool that admits untrusted work there (ADR 0022), so the
      // soak keeps exercising both trust classes.
      untrustedOnProcess: true,
    });
  }

  /** An org with a repository, an API token and a host credential for the default pool. */
  async seedTenant(slug: string, files: Record<string, string>) {
    const git = this.git as TestGitServer;
    await createOrg(this.db, slug);
    const repo = await git.createRepo(`${slug}.git`, files);
    const secret = `${slug}-secret`;
    const r = await addRepo(
      this.db,
      {
        orgSlug: slug,
        name: `${slug}/app`,
        cloneUrl: repo.cloneUrl,
        webhookSecret: secret,
        workflowPath: ".kiln/workflow.yaml",
      },
      git.sourcePolicy,
    );
    const token = await createApiToken(this.db, { orgSlug: slug, role: "member" });
    const agent = await createAgentToken(this.db, { pool: "default" });
    return { repoId: r.id, repoName: `${slug}/app`, git: repo, secret, token: token.token, agentToken: agent.token };
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
