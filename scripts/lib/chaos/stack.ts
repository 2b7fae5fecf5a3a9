// A whole Kiln stack on loopback for fault tests and the chaos soak: PostgreSQL (its own embedded
// server, or a database the caller provides), Redis, an S3-compatible store, a git server, and the
// web, workers and host agents as separate OS processes. Every process can be SIGKILLed or
// SIGSTOPped by pid and restarted with exactly the arguments and environment it had.
import { spawn, type ChildProcess } from "node:child_process";
import { chmod, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createDb, ensureDatabase, migrateDatabase, type Db } from "@kiln/db";
import { addMember, addRepo, createAgentToken, createApiToken, createOrg } from "@kiln/engine";
import {
  freePort,
  startGitServer,
  startPostgres,
  startRedis,
  startS3,
  type PostgresHandle,
  type RedisHandle,
  type S3Handle,
  type TestGitServer,
} from "@kiln/testkit";
import { PgBoss } from "pg-boss";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const NEXT_BIN = path.join(ROOT, "node_modules/next/dist/bin/next");

export interface StackOptions {
  /** Use this (already migrated) database instead of starting an embedded PostgreSQL. */
  databaseUrl?: string;
  /** Environment for every process (lease TTL, heartbeat, ...), on top of the defaults below. */
  env?: Record<string, string>;
  /** Start Redis and s3rver (logs and artifacts need them). Default true. */
  objectStore?: boolean;
}

interface Spec {
  cmd: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
}

export interface ManagedProc {
  name: string;
  child: ChildProcess;
  /** The last ~200 kB of this process's output, across restarts. */
  output(): string;
  alive(): boolean;
}

/** Short leases so that faults resolve in seconds, yet long enough that a loaded 2-core machine does
 * not expire healthy attempts (3 s did, at load 17); a test or the soak can override any of them. */
export const FAST_ENV: Record<string, string> = {
  KILN_LEASE_TTL_MS: "10000",
  KILN_HEARTBEAT_MS: "1000",
  KILN_RECONCILE_MS: "250",
  KILN_BACKOFF_BASE_MS: "200",
  KILN_BACKOFF_MAX_MS: "1000",
  KILN_RELAY_POLL_MS: "250",
};

export class Stack {
  db!: Db;
  dbUrl = "";
  tmp = "";
  git!: TestGitServer;
  pgPort = 0;
  private pg: PostgresHandle | null = null;
  private redis: RedisHandle | null = null;
  private s3: S3Handle | null = null;
  private readonly specs = new Map<string, Spec>();
  private readonly procs = new Map<string, ManagedProc>();
  private readonly outputs = new Map<string, string>();
  private readonly webPorts = new Map<string, number>();
  readonly env: Record<string, string>;

  constructor(private readonly opts: StackOptions = {}) {
    this.env = { ...FAST_ENV, ...opts.env };
  }

  /** Backing services only: database (migrated, pg-boss schema), Redis, S3, git. */
  async start(): Promise<void> {
    this.tmp = await mkdtemp(path.join(os.tmpdir(), "kiln-faults-"));
    await chmod(this.tmp, 0o755); // embedded PostgreSQL runs as `postgres` when we are root
    if (this.opts.databaseUrl) {
      this.dbUrl = this.opts.databaseUrl;
    } else {
      this.pgPort = await freePort();
      await this.startPostgres();
      this.dbUrl = `postgresql://postgres:postgres@127.0.0.1:${this.pgPort}/kiln`;
      await ensureDatabase(this.dbUrl);
      await migrateDatabase(this.dbUrl);
      const boss = new PgBoss({ connectionString: this.dbUrl, max: 2 });
      await boss.start();
      await boss.stop({ graceful: false, close: true });
    }
    if (this.opts.objectStore !== false) {
      this.redis = await startRedis({ dataDir: path.join(this.tmp, "redis") });
      this.s3 = await startS3({ dataDir: path.join(this.tmp, "s3"), bucket: "kiln" });
      Object.assign(this.env, { REDIS_URL: this.redis.url, S3_ENDPOINT: this.s3.endpoint, KILN_S3_BUCKET: "kiln" });
    }
    this.db = createDb({ url: this.dbUrl, max: 4 });
    this.git = await startGitServer({ rootDir: path.join(this.tmp, "git") });
  }

  /** (Re)starts the embedded PostgreSQL on the same data directory and port. */
  async startPostgres(): Promise<void> {
    this.pg = await startPostgres({
      dataDir: path.join(this.tmp, "pg"),
      port: this.pgPort,
      initdbFlags: ["--no-sync"],
      // A clean stop (fast shutdown) checkpoints, so durability settings are not under test here.
      postgresFlags: ["-c", "fsync=off", "-c", "full_page_writes=off", "-c", "max_connections=300"],
    });
  }

  /** Fast shutdown of the embedded PostgreSQL: every session is cut, nothing is lost. */
  async stopPostgres(): Promise<void> {
    await this.pg?.stop();
    this.pg = null;
  }

  get s3Handle(): S3Handle | null {
    return this.s3;
  }

  baseUrl(web = "web"): string {
    const port = this.webPorts.get(web);
    if (!port) throw new Error(`no web process named ${web}`);
    return `http://127.0.0.1:${port}`;
  }

  webNames(): string[] {
    return [...this.webPorts.keys()];
  }

  /** Ports of the web processes that are currently running. */
  liveWebPorts(): number[] {
    return [...this.webPorts].filter(([name]) => this.procs.get(name)?.alive()).map(([, port]) => port);
  }

  async startWeb(name = "web"): Promise<ManagedProc> {
    const port = this.webPorts.get(name) ?? (await freePort());
    this.webPorts.set(name, port);
    const p = this.launch(name, {
      cmd: process.execPath,
      args: [NEXT_BIN, "start", "-p", String(port), "-H", "127.0.0.1"],
      cwd: path.join(ROOT, "apps/web"),
      env: {},
    });
    await this.waitHealthy(name, 90_000);
    return p;
  }

  startWorkers(name = "workers"): ManagedProc {
    return this.launch(name, {
      cmd: process.execPath,
      args: ["--import", "tsx", "apps/workers/src/index.ts"],
      cwd: ROOT,
      env: {},
    });
  }

  /** One host agent (process driver): one OS process, so signals by pid reach the agent itself. */
  startAgent(
    name: string,
    token: string,
    opts: { web?: string; controlUrl?: string; env?: Record<string, string> } = {},
  ): ManagedProc {
    return this.launch(name, {
      cmd: process.execPath,
      args: ["--import", "tsx", "apps/host-agent/src/index.ts"],
      cwd: ROOT,
      env: {
        KILN_CONTROL_URL: opts.controlUrl ?? this.baseUrl(opts.web),
        KILN_AGENT_TOKEN: token,
        KILN_SANDBOX_DRIVER: "process",
        KILN_AGENT_SLOTS: "2",
        KILN_WORK_DIR: path.join(this.tmp, name),
        KILN_HOSTNAME: name,
        KILN_CLAIM_WAIT_MS: "2000",
        ...opts.env,
      },
    });
  }

  proc(name: string): ManagedProc {
    const p = this.procs.get(name);
    if (!p) throw new Error(`no process named ${name}`);
    return p;
  }

  names(): string[] {
    return [...this.procs.keys()];
  }

  /** Sends a signal to the process itself (by pid). SIGKILL waits until it is gone. */
  async signal(name: string, sig: NodeJS.Signals): Promise<void> {
    const p = this.proc(name);
    if (!p.alive()) return;
    if (sig !== "SIGKILL") {
      p.child.kill(sig);
      return;
    }
    const gone = new Promise<void>((resolve) => p.child.once("exit", () => resolve()));
    p.child.kill("SIGCONT");
    p.child.kill("SIGKILL");
    await gone;
  }

  /** Starts the named process again with its original arguments and environment. */
  async restart(name: string): Promise<ManagedProc> {
    const spec = this.specs.get(name);
    if (!spec) throw new Error(`no process named ${name}`);
    if (this.proc(name).alive()) await this.signal(name, "SIGKILL");
    const p = this.launch(name, spec);
    if (this.webPorts.has(name)) await this.waitHealthy(name, 90_000);
    return p;
  }

  async waitHealthy(web = "web", timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (!this.proc(web).alive()) throw new Error(`${web} exited while starting\n${this.logs([web])}`);
      const ok = await fetch(`${this.baseUrl(web)}/healthz`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) return;
      await sleep(200);
    }
    throw new Error(`${web} not healthy within ${timeoutMs} ms\n${this.logs([web])}`);
  }

  async seedTenant(slug: string, files: Record<string, string>, opts: { member?: string; workflowPath?: string } = {}) {
    await createOrg(this.db, slug);
    const repo = await this.git.createRepo(`${slug}.git`, files);
    const secret = `${slug}-secret`;
    const r = await addRepo(this.db, {
      orgSlug: slug,
      name: `${slug}/app`,
      cloneUrl: repo.cloneUrl,
      webhookSecret: secret,
      workflowPath: opts.workflowPath ?? ".kiln/workflow.yaml",
    });
    if (opts.member) await addMember(this.db, { orgSlug: slug, login: opts.member, role: "member" });
    const token = await createApiToken(this.db, { orgSlug: slug, role: "member" });
    const agent = await createAgentToken(this.db, { pool: "default" });
    return { repoId: r.id, repoName: `${slug}/app`, git: repo, secret, token: token.token, agentToken: agent.token };
  }

  /** Writes each process's retained output to <dir>/<name>.log (for a failed soak's post-mortem). */
  async dumpLogs(dir: string): Promise<void> {
    await mkdir(dir, { recursive: true });
    for (const [name, out] of this.outputs) await writeFile(path.join(dir, `${name}.log`), out);
  }

  logs(names = this.names(), tail = 4000): string {
    return names.map((n) => `--- ${n}\n${(this.outputs.get(n) ?? "").slice(-tail)}`).join("\n");
  }

  async stop(): Promise<void> {
    for (const p of this.procs.values()) {
      if (p.alive()) {
        p.child.kill("SIGCONT");
        p.child.kill("SIGKILL");
      }
    }
    await this.git?.stop().catch(() => undefined);
    await this.db?.$disconnect().catch(() => undefined);
    await this.redis?.stop().catch(() => undefined);
    await this.s3?.stop().catch(() => undefined);
    await this.stopPostgres().catch(() => undefined);
    // A step orphaned by a killed agent may still be writing under tmp for a moment.
    if (this.tmp) await rm(this.tmp, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  }

  private launch(name: string, spec: Spec): ManagedProc {
    this.specs.set(name, spec);
    const child = spawn(spec.cmd, spec.args, {
      cwd: spec.cwd,
      // PGAPPNAME names every PostgreSQL session after its process (pg_stat_activity.application_name).
      env: {
        ...process.env,
        DATABASE_URL: this.dbUrl,
        KILN_DATA_DIR: path.join(this.tmp, "data"),
        NEXT_TELEMETRY_DISABLED: "1",
        PGAPPNAME: name,
        ...this.env,
        ...spec.env,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const keep = (b: Buffer) =>
      this.outputs.set(name, ((this.outputs.get(name) ?? "") + b.toString("utf8")).slice(-200_000));
    child.stdout?.on("data", keep);
    child.stderr?.on("data", keep);
    const p: ManagedProc = {
      name,
      child,
      output: () => this.outputs.get(name) ?? "",
      alive: () => child.exitCode === null && child.signalCode === null,
    };
    this.procs.set(name, p);
    return p;
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
