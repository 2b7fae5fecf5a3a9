import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createDb, type Db } from "@kiln/db";
import { addMember, addRepo, createAgentToken, createApiToken, createOrg } from "@kiln/engine";
import {
  cloneDatabase,
  dropDatabase,
  freePort,
  startGitServer,
  startRedis,
  uniqueDatabaseName,
  type RedisHandle,
  type TestGitServer,
} from "@kiln/testkit";
import { inject } from "vitest";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

export interface Proc {
  name: string;
  child: ChildProcess;
  output: () => string;
}

/**
 * The real platform for black-box tests: a cloned database, the production web server
 * (`next start`), the workers and host agents as separate OS processes, and a git server.
 */
export class Platform {
  db!: Db;
  dbUrl = "";
  base = "";
  git!: TestGitServer;
  private dbName = uniqueDatabaseName("e2e");
  private tmp = "";
  private procs: Proc[] = [];
  private redis: RedisHandle | null = null;
  readonly env: Record<string, string>;

  constructor(env: Record<string, string> = {}) {
    this.env = {
      KILN_LEASE_TTL_MS: "3000",
      KILN_HEARTBEAT_MS: "500",
      KILN_RECONCILE_MS: "250",
      KILN_BACKOFF_BASE_MS: "200",
      KILN_BACKOFF_MAX_MS: "1000",
      ...env,
    };
  }

  async start(): Promise<void> {
    this.tmp = await mkdtemp(path.join(os.tmpdir(), "kiln-e2e-"));
    this.dbUrl = await cloneDatabase(inject("pgServerUrl"), inject("pgTemplate"), this.dbName);
    this.db = createDb({ url: this.dbUrl, max: 4 });
    this.git = await startGitServer({ rootDir: path.join(this.tmp, "git") });
    // Live log fan-out needs a Redis; never the machine's 6379 (a test may bring its own).
    if (!this.env.REDIS_URL) {
      this.redis = await startRedis({ dataDir: path.join(this.tmp, "redis") });
      this.env.REDIS_URL = this.redis.url;
    }
    const port = await freePort();
    this.base = `http://127.0.0.1:${port}`;
    this.spawn("workers", process.execPath, ["--import", "tsx", "apps/workers/src/index.ts"], ROOT, {});
    this.spawn(
      "web",
      path.join(ROOT, "node_modules/.bin/next"),
      ["start", "-p", String(port), "-H", "127.0.0.1"],
      path.join(ROOT, "apps/web"),
      {},
    );
    await this.waitFor(`${this.base}/healthz`, 60_000);
  }

  spawn(name: string, cmd: string, args: string[], cwd: string, extra: Record<string, string>): Proc {
    let out = "";
    const child = spawn(cmd, args, {
      cwd,
      env: {
        ...process.env,
        DATABASE_URL: this.dbUrl,
        KILN_DATA_DIR: path.join(this.tmp, "data"),
        NEXT_TELEMETRY_DISABLED: "1",
        ...this.env,
        ...extra,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const keep = (b: Buffer) => {
      out = (out + b.toString("utf8")).slice(-200_000);
    };
    child.stdout?.on("data", keep);
    child.stderr?.on("data", keep);
    const p = { name, child, output: () => out };
    this.procs.push(p);
    return p;
  }

  /** Starts one more host agent process (process driver) with a host credential for `pool`. */
  async startAgent(name: string, token: string, extra: Record<string, string> = {}): Promise<Proc> {
    // `node --import tsx` rather than the tsx wrapper: one OS process per agent, so a test's
    // SIGSTOP/SIGKILL by pid reaches the agent itself.
    return this.spawn(name, process.execPath, ["--import", "tsx", "apps/host-agent/src/index.ts"], ROOT, {
      KILN_CONTROL_URL: this.base,
      KILN_AGENT_TOKEN: token,
      KILN_SANDBOX_DRIVER: "process",
      KILN_AGENT_SLOTS: "2",
      KILN_WORK_DIR: path.join(this.tmp, name),
      KILN_CLAIM_WAIT_MS: "2000",
      ...extra,
    });
  }

  async seedTenant(slug: string, files: Record<string, string>, opts: { member?: string; secret?: string } = {}) {
    await createOrg(this.db, slug);
    const repo = await this.git.createRepo(`${slug}.git`, files);
    const secret = opts.secret ?? `${slug}-secret`;
    const r = await addRepo(this.db, {
      orgSlug: slug,
      name: `${slug}/app`,
      cloneUrl: repo.cloneUrl,
      webhookSecret: secret,
      workflowPath: ".kiln/workflow.yaml",
    });
    if (opts.member) await addMember(this.db, { orgSlug: slug, login: opts.member, role: "member" });
    const token = await createApiToken(this.db, { orgSlug: slug, role: "member" });
    const agent = await createAgentToken(this.db, { pool: "default" });
    return { repoId: r.id, repoName: `${slug}/app`, git: repo, secret, token: token.token, agentToken: agent.token };
  }

  async api(
    method: string,
    p: string,
    token: string | null,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<{ status: number; json: any }> {
    const r = await fetch(`${this.base}${p}`, {
      method,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(body !== undefined ? { "content-type": "application/json" } : {}),
        ...headers,
      },
      ...(body !== undefined ? { body: typeof body === "string" ? body : JSON.stringify(body) } : {}),
    });
    const text = await r.text();
    let json: any = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      json = { raw: text };
    }
    return { status: r.status, json };
  }

  async waitForRun(runId: string, token: string, pred: (run: any) => boolean, timeoutMs = 60_000): Promise<any> {
    const deadline = Date.now() + timeoutMs;
    let last: any = null;
    while (Date.now() < deadline) {
      const r = await this.api("GET", `/v1/workflow-runs/${runId}`, token);
      last = r.json;
      if (r.status === 200 && pred(r.json)) return r.json;
      await new Promise((res) => setTimeout(res, 150));
    }
    throw new Error(`run ${runId} did not reach the expected state: ${JSON.stringify(last)}\n${this.logs()}`);
  }

  logs(): string {
    return this.procs.map((p) => `--- ${p.name}\n${p.output().slice(-4000)}`).join("\n");
  }

  private async waitFor(url: string, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      try {
        if ((await fetch(url)).ok) return;
      } catch {
        // not yet
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error(`${url} not healthy in time\n${this.logs()}`);
  }

  async stop(): Promise<void> {
    for (const p of this.procs) {
      if (p.child.exitCode === null && p.child.signalCode === null) {
        p.child.kill("SIGCONT");
        p.child.kill("SIGKILL");
      }
    }
    await this.git?.stop();
    await this.redis?.stop();
    await this.db?.$disconnect();
    await dropDatabase(inject("pgServerUrl"), this.dbName).catch(() => undefined);
    await rm(this.tmp, { recursive: true, force: true });
  }
}
