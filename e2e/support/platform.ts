import { type Db } from "@kiln/db";
import { bindJobTokenKek, loadOrCreateIdentityKek } from "@kiln/engine";
import {
  cloneDatabase,
  dropDatabase,
  REPO_ROOT,
  startPlatform,
  uniqueDatabaseName,
  type ManagedProc,
  type Platform as TestPlatform,
  type TestGitServer,
} from "@kiln/testkit";
import { execFile } from "node:child_process";
import path from "node:path";
import { inject } from "vitest";
import { seedTenant } from "./seed-tenant.ts";

export type Proc = ManagedProc;

/** Short leases and backoffs so that the suites' faults resolve in seconds. */
const E2E_ENV: Record<string, string> = {
  KILN_LEASE_TTL_MS: "3000",
  KILN_HEARTBEAT_MS: "500",
  KILN_RECONCILE_MS: "250",
  KILN_BACKOFF_BASE_MS: "200",
  KILN_BACKOFF_MAX_MS: "1000",
  // Rate limits (docs/adr/0044) are off in the suites, which poll with one token from many places
  // at once; e2e/rate-limits.test.ts turns them on and checks the defaults.
  KILN_RATE_LIMIT_ENABLED: "false",
};

/**
 * The real platform for black-box tests (@kiln/testkit's startPlatform): a database cloned from
 * the vitest template, the production web server (`next start`), the workers and host agents as
 * separate OS processes, a private Redis unless `env` names one, and a git server. Tests that need
 * object storage start their own store and pass its s3Env().
 */
export class Platform {
  db!: Db;
  dbUrl = "";
  base = "";
  git!: TestGitServer;
  private platform: TestPlatform | null = null;
  private readonly dbName = uniqueDatabaseName("e2e");
  readonly env: Record<string, string>;

  constructor(
    env: Record<string, string> = {},
    /** Untrusted runs on the process agents of the development pool (ADR 0022): for suites about
     * something else (caches, egress) that run a fork PR without a microVM host. */
    private readonly opts: { untrustedOnProcess?: boolean; webPort?: number } = {},
  ) {
    this.env = { ...E2E_ENV, ...env };
  }

  async start(): Promise<void> {
    this.dbUrl = await cloneDatabase(inject("pgServerUrl"), inject("pgTemplate"), this.dbName);
    this.platform = await startPlatform({
      databaseUrl: this.dbUrl,
      // Live log fan-out needs a Redis; never the machine's 6379 (a test may bring its own).
      redis: this.env.REDIS_URL ?? true,
      s3: false,
      git: true,
      untrustedOnProcess: this.opts.untrustedOnProcess ?? false,
      env: this.env,
      agentEnv: { KILN_SANDBOX_DRIVER: "process", KILN_AGENT_SLOTS: "2", KILN_CLAIM_WAIT_MS: "2000" },
    });
    this.db = this.platform.db;
    // Tests that sign job tokens themselves use the web server's keys, sealed under its KEK (issue 28).
    const kekFile = this.platform.identityKekFile();
    bindJobTokenKek(this.db, () => loadOrCreateIdentityKek(kekFile));
    if (!this.platform.git) throw new Error("the platform started no git server");
    this.git = this.platform.git;
    this.platform.startWorkers();
    // A fixed port when the suite must know its public URL before the server starts (the ID-token issuer).
    await this.platform.startWeb("web", {
      healthTimeoutMs: 60_000,
      ...(this.opts.webPort ? { port: this.opts.webPort } : {}),
    });
    this.base = this.platform.baseUrl();
  }

  /** Starts one more host agent process (process driver) with a host credential for `pool`. */
  async startAgent(name: string, token: string, extra: Record<string, string> = {}): Promise<Proc> {
    return this.started().startAgent(name, token, { env: extra });
  }

  /**
   * A host agent registered with `npm run agent -- register` (issue 22): it runs from its state
   * directory alone, no credential in its environment.
   */
  startRegisteredAgent(name: string, stateDir: string, extra: Record<string, string> = {}): Proc {
    const platform = this.started();
    return platform.launch(name, {
      cmd: process.execPath,
      args: ["--import", "tsx", "apps/host-agent/src/index.ts"],
      cwd: REPO_ROOT,
      env: {
        KILN_AGENT_STATE_DIR: stateDir,
        KILN_WORK_DIR: path.join(platform.dataDir, name),
        KILN_HOSTNAME: name,
        KILN_SANDBOX_DRIVER: "process",
        KILN_AGENT_SLOTS: "2",
        KILN_CLAIM_WAIT_MS: "2000",
        ...extra,
      },
    });
  }

  /** The agent's own command line (`npm run agent -- <args>`), run to completion. */
  async agentCommand(args: string[], env: Record<string, string> = {}): Promise<{ code: number; out: string }> {
    return new Promise((resolve, reject) => {
      execFile(
        process.execPath,
        ["--import", "tsx", "apps/host-agent/src/index.ts", ...args],
        { cwd: REPO_ROOT, env: { PATH: process.env.PATH ?? "", ...env }, timeout: 60_000 },
        (err, stdout, stderr) => {
          const code = err ? (typeof err.code === "number" ? err.code : -1) : 0;
          if (err && code === -1) reject(err);
          else resolve({ code, out: `${stdout}${stderr}` });
        },
      );
    });
  }

  /** One more web server process on this platform (its own env on top), answering at the returned URL. */
  async startWeb(name: string, env: Record<string, string>): Promise<string> {
    const platform = this.started();
    await platform.startWeb(name, { env, healthTimeoutMs: 60_000 });
    return platform.baseUrl(name);
  }

  /** One more workers process (a second scheduler, relay and job runner racing the first). */
  startWorkers(name: string, env?: Record<string, string>): Proc {
    return this.started().startWorkers(name, env);
  }

  seedTenant(slug: string, files: Record<string, string>, opts: { member?: string; secret?: string } = {}) {
    return seedTenant(this.db, this.git, slug, files, opts);
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
    let json: any;
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
    return this.platform?.logs() ?? "";
  }

  /** Signals a managed process by name (e.g. SIGSTOP the workers to hold the outbox). */
  signal(name: string, sig: NodeJS.Signals): Promise<void> {
    return this.started().signal(name, sig);
  }

  /** The attestor's key file (issue 17): the workers get it, nothing else does. */
  get attestationKeyFile(): string {
    return this.started().attestationKeyFile;
  }

  proc(name: string): Proc {
    return this.started().proc(name);
  }

  /** The secrets KEK file every process of this platform reads (ADR 0025). */
  get kekFile(): string {
    const file = this.started().env.KILN_SECRETS_KEK_FILE;
    if (!file) throw new Error("the platform has no secrets KEK file");
    return file;
  }

  async stop(): Promise<void> {
    await this.platform?.stop();
    await dropDatabase(inject("pgServerUrl"), this.dbName).catch(() => undefined);
  }

  private started(): TestPlatform {
    if (!this.platform) throw new Error("platform not started");
    return this.platform;
  }
}
