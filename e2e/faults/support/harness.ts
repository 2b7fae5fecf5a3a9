// The fault scenarios' harness: @kiln/testkit's platform with the soak's short leases, on a database
// cloned from the vitest template (or on its own embedded PostgreSQL, for the database outage), plus
// the API helpers every scenario uses.
import { setTimeout as sleep } from "node:timers/promises";
import { sign } from "@octokit/webhooks-methods";
import { cloneDatabase, dropDatabase, FAST_LEASES_ENV, Platform, uniqueDatabaseName } from "@kiln/testkit";
import { inject } from "vitest";
import { forgeIdOf, seedTenant, type SeededTenant } from "../../support/seed-tenant.ts";

export { sleep };
export type Tenant = SeededTenant;
export interface ApiResult {
  status: number;
  json: any;
}

export class FaultStack extends Platform {
  private cloned: string | null = null;

  /** `ownPostgres`: a private embedded server the test may stop and start; otherwise a cloned database. */
  static async create(opts: { env?: Record<string, string>; ownPostgres?: boolean } = {}): Promise<FaultStack> {
    let databaseUrl: string | undefined;
    let cloned: string | null = null;
    if (!opts.ownPostgres) {
      cloned = uniqueDatabaseName("faults");
      databaseUrl = await cloneDatabase(inject("pgServerUrl"), inject("pgTemplate"), cloned);
    }
    const s = new FaultStack({
      ...(databaseUrl ? { databaseUrl } : {}),
      env: { ...FAST_LEASES_ENV, ...opts.env },
      git: true,
      agentEnv: { KILN_SANDBOX_DRIVER: "process", KILN_AGENT_SLOTS: "2", KILN_CLAIM_WAIT_MS: "2000" },
      agentHostnames: true,
      // Fault tests push as a non-member (untrusted runs) to process agents: one operator's
      // development pool that admits them there (ADR 0022); the faults, not placement, are under test.
      untrustedOnProcess: true,
    });
    s.cloned = cloned;
    await s.start();
    return s;
  }

  seedTenant(slug: string, files: Record<string, string>, opts: { member?: string; workflowPath?: string } = {}) {
    if (!this.git) throw new Error("the platform started no git server");
    return seedTenant(this.db, this.git, slug, files, opts);
  }

  override async stop(): Promise<void> {
    await super.stop();
    if (this.cloned) await dropDatabase(inject("pgServerUrl"), this.cloned).catch(() => undefined);
  }

  async api(
    method: string,
    p: string,
    token: string | null,
    body?: unknown,
    headers: Record<string, string> = {},
    web = "web",
  ): Promise<ApiResult> {
    const r = await fetch(`${this.baseUrl(web)}${p}`, {
      method,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(body !== undefined ? { "content-type": "application/json" } : {}),
        ...headers,
      },
      ...(body !== undefined ? { body: typeof body === "string" ? body : JSON.stringify(body) } : {}),
    });
    return { status: r.status, json: parseJson(await r.text()) };
  }

  /** Manual trigger. `base` sends it elsewhere (e.g. through a proxy in front of the web). */
  async trigger(
    t: Tenant,
    key: string,
    opts: { workflowPath?: string; sha?: string; base?: string } = {},
  ): Promise<ApiResult> {
    const body = { workflow_path: opts.workflowPath ?? ".kiln/workflow.yaml", commit_sha: opts.sha ?? t.git.headSha };
    const r = await fetch(`${opts.base ?? this.baseUrl()}/v1/repos/${t.repoId}/workflow-runs`, {
      method: "POST",
      headers: { authorization: `Bearer ${t.token}`, "content-type": "application/json", "idempotency-key": key },
      body: JSON.stringify(body),
    });
    return { status: r.status, json: parseJson(await r.text()) };
  }

  /** A signed GitHub push delivery for the tenant's repo. */
  async webhook(t: Tenant, delivery: string, opts: { sha?: string; base?: string } = {}): Promise<ApiResult> {
    const body = pushBody(t.repoName, opts.sha ?? t.git.headSha);
    const r = await fetch(`${opts.base ?? this.baseUrl()}/v1/webhooks/github`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-github-event": "push",
        "x-github-delivery": delivery,
        "x-hub-signature-256": await sign(t.secret, body),
      },
      body,
    });
    return { status: r.status, json: parseJson(await r.text()) };
  }

  async waitForRun(runId: string, token: string, pred: (run: any) => boolean, timeoutMs = 60_000): Promise<any> {
    const deadline = Date.now() + timeoutMs;
    let last: any = null;
    while (Date.now() < deadline) {
      const r = await this.api("GET", `/v1/workflow-runs/${runId}`, token).catch(() => null);
      last = r?.json;
      if (r?.status === 200 && pred(r.json)) return r.json;
      await sleep(150);
    }
    throw new Error(`run ${runId} did not reach the expected state: ${JSON.stringify(last)}\n${this.logs()}`);
  }

  /** Polls a SQL condition (fast: the moments these tests aim at last milliseconds). */
  async waitForSql<T>(query: () => Promise<T[]>, timeoutMs = 30_000, pollMs = 20): Promise<T[]> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const rows = await query();
      if (rows.length > 0) return rows;
      await sleep(pollMs);
    }
    throw new Error(`condition not met within ${timeoutMs} ms\n${this.logs()}`);
  }
}

function pushBody(repoName: string, sha: string): string {
  return JSON.stringify({
    ref: "refs/heads/main",
    before: "0".repeat(40),
    after: sha,
    created: false,
    deleted: false,
    forced: false,
    repository: { full_name: repoName, name: repoName.split("/")[1] },
    sender: { login: "dev", id: forgeIdOf("dev") },
    commits: [],
    head_commit: null,
  });
}

function parseJson(text: string): any {
  try {
    return text ? JSON.parse(text) : null;
  } catch {
    return { raw: text };
  }
}
