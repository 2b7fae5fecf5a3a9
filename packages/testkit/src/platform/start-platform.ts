// The whole Kiln platform on loopback, for `npm run up`, the e2e and fault suites, the chaos soak
// and the benchmarks: PostgreSQL (embedded, or a URL the caller gives), Redis, the embedded S3 store,
// optionally a git server and an OCI registry with the base image, and the production web server,
// the workers and host agents as child processes started by path (never imported).
import { generateKeyPairSync } from "node:crypto";
import { existsSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { chmod, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createDb, ensureDatabase, grantAppRoles, migrateDatabase, sqlPool, type Db } from "@kiln/db";
import { PgBoss } from "pg-boss";
import { BUSYBOX, publishBaseImage, type PublishedImage } from "../base-image.ts";
import { startPostgres, type PostgresHandle } from "../embedded-postgres.ts";
import { startRedis, type RedisHandle } from "../embedded-redis.ts";
import { s3Env, startS3, type S3Handle } from "../embedded-s3.ts";
import { freePort } from "../free-port.ts";
import { startGitServer, type TestGitServer } from "../git-server.ts";
import { REGISTRY_BIN, startRegistry, type RegistryHandle } from "../oci-registry.ts";
import { startS3Process } from "../s3-process.ts";
import { ensureAppLoginRoles, type AppRoleUrls } from "./app-roles.ts";
import { unmountUnder } from "./leftover-mounts.ts";
import { ManagedProcesses, type ManagedProc, type OutputMode, type ProcessSpec } from "./managed-processes.ts";

/** Short leases so that faults resolve in seconds, yet long enough that a loaded 2-core machine does
 * not expire healthy attempts (3 s did, at load 17): the fault suite's and the chaos soak's defaults. */
export const FAST_LEASES_ENV: Record<string, string> = {
  KILN_LEASE_TTL_MS: "10000",
  KILN_HEARTBEAT_MS: "1000",
  KILN_RECONCILE_MS: "250",
  KILN_BACKOFF_BASE_MS: "200",
  KILN_BACKOFF_MAX_MS: "1000",
  KILN_RELAY_POLL_MS: "250",
};

/** The repository root: the apps are started from here by path. */
export const REPO_ROOT = path.resolve(import.meta.dirname, "../../../..");
const NEXT_BIN = path.join(REPO_ROOT, "node_modules/next/dist/bin/next");

/** fast: throwaway cluster (no fsync, no full-page writes), for tests; durable: PostgreSQL's defaults,
 * for benchmarks and `npm run up`, whose figures and data must mean what production's would. */
export type PostgresMode = "fast" | "durable";

export interface PlatformOptions {
  /** Everything the platform writes lives here. Default: a fresh temp dir, removed by stop(). */
  dataDir?: string;
  /** Use this database instead of an embedded PostgreSQL. */
  databaseUrl?: string;
  /** Apply migrations and create pg-boss's schema. Default: only for the embedded PostgreSQL. */
  migrate?: boolean;
  /**
   * Which database users the web server and the workers connect as (issue 28): true (default) makes
   * login members of the kiln_web/kiln_workers roles on this cluster when the owner may (the
   * embedded PostgreSQL, the test server; otherwise the owner's URL, logged); given URLs are used
   * as they are (an operator's own roles); false: the owner's URL for every process, as before.
   */
  appRoles?: boolean | AppRoleUrls;
  postgres?: PostgresMode;
  /** Extra `postgres` settings for the embedded cluster, e.g. ["-c", "shared_preload_libraries=pg_stat_statements"]
   * for the per-job profile (bench/job-profile). */
  postgresFlags?: string[];
  /** Fixed port for the embedded PostgreSQL (default: a free one); kept across stopPostgres/startPostgres. */
  postgresPort?: number;
  /** Start a private Redis (default), use the given URL, or none (false). */
  redis?: boolean | string;
  /** Start the embedded S3 store in this process (default), in a child process of its own, or none. */
  s3?: boolean | "own-process";
  /** A smart-HTTP git server for tenants' repositories. Default false. */
  git?: boolean;
  /** Debian's docker-registry with Kiln's base image published to it (sets KILN_REGISTRIES and
   * KILN_POOL_IMAGES unless env has them). Default false; see registryAvailable(). Without it the
   * pools' default image is `host` (issue 30) unless env sets KILN_POOL_IMAGES. */
  registry?: boolean;
  /**
   * A pool configured as one operator's development pool (process hosts admitted and serving several
   * orgs; untrusted runs still need microVMs unless `untrustedOnProcess`), docs/adr/0022. Default
   * "default", the pool `npm run up`, the e2e suites and the benches put their agents in; null: none.
   */
  developmentPool?: string | null;
  /** With developmentPool: also admit untrusted runs on its process hosts (the hostile-tenant suite). */
  untrustedOnProcess?: boolean;
  /** Environment of every process, on top of the platform's own (DATABASE_URL, REDIS_URL, S3_*). */
  env?: Record<string, string>;
  /** Environment of every host agent, on top of `env`. */
  agentEnv?: Record<string, string>;
  /** Each agent registers under its process name (KILN_HOSTNAME), so tests and the soak can tell them apart. */
  agentHostnames?: boolean;
  output?: OutputMode;
  /** What stop() sends the apps first (with a grace period); default SIGKILL at once. */
  stopSignal?: NodeJS.Signals;
  /** Connections of `platform.db`. Default 4. */
  dbPoolSize?: number;
  /** Start-up progress (migrations, the base image); which services it starts is the caller's to say. */
  log?: (message: string) => void;
}

export interface WebOptions {
  /** Default: a free port, kept across restarts. */
  port?: number;
  /** node flags before next's own argv, e.g. ["--cpu-prof", "--cpu-prof-dir=/tmp/prof"]. */
  nodeFlags?: string[];
  /** Sent first on stop() (a CPU profile is written on SIGINT, not on SIGKILL). */
  stopSignal?: NodeJS.Signals;
  env?: Record<string, string>;
  healthTimeoutMs?: number;
}

export interface AgentOptions {
  /** Which web process the agent talks to (default "web"), or any URL (a proxy in front of it). */
  web?: string;
  controlUrl?: string;
  /** KILN_SANDBOX_DRIVER; unset: the agent's own default. */
  driver?: string;
  env?: Record<string, string>;
  onStdoutLine?: (line: string) => void;
}

export class Platform {
  db!: Db;
  /** The owner's URL: migrations, the harness's own `db`, the CLI and any process `launch`ed by name. */
  dbUrl = "";
  /** What the web server and the workers connect as (see PlatformOptions.appRoles). */
  appDbUrls: AppRoleUrls = { web: "", workers: "" };
  dataDir = "";
  redisUrl: string | null = null;
  s3: Omit<S3Handle, "stop"> | null = null;
  git: TestGitServer | null = null;
  registry: RegistryHandle | null = null;
  baseImage: PublishedImage | null = null;
  postgresPort = 0;
  /** The attestor's signing key (issue 17): given to the workers only, never to web or agents. */
  attestationKeyFile = "";
  /** The environment every process gets (after the platform's own variables); mutable until apps start. */
  readonly env: Record<string, string>;
  private readonly procs: ManagedProcesses;
  private readonly webPorts = new Map<string, number>();
  private readonly stops: (() => Promise<void>)[] = [];
  private pg: PostgresHandle | null = null;
  private ownsDataDir = false;

  /**
   * The identity KEK file the web app and workers read (their KILN_DATA_DIR's default unless the
   * platform's env names one): a test that signs job tokens itself binds it to `db` (issue 28).
   */
  identityKekFile(): string {
    return this.env.KILN_IDENTITY_KEK_FILE ?? path.join(this.dataDir, "data", "identity-kek");
  }

  constructor(private readonly opts: PlatformOptions = {}) {
    this.env = { ...opts.env };
    this.procs = new ManagedProcesses(opts.output ?? "keep");
  }

  /** Backing services: database (migrated), Redis, S3, git, registry. Then `db` is ready. */
  async start(): Promise<void> {
    const o = this.opts;
    const log = o.log ?? (() => undefined);
    if (o.dataDir) {
      this.dataDir = path.resolve(o.dataDir);
      await mkdir(this.dataDir, { recursive: true });
    } else {
      this.dataDir = await mkdtemp(path.join(os.tmpdir(), "kiln-platform-"));
      this.ownsDataDir = true;
      await chmod(this.dataDir, 0o755); // embedded PostgreSQL runs as `postgres` when we are root
    }
    if (o.databaseUrl) {
      this.dbUrl = o.databaseUrl;
    } else {
      this.postgresPort = o.postgresPort ?? 0;
      await this.startPostgres();
      this.dbUrl = `postgresql://postgres:postgres@127.0.0.1:${this.postgresPort}/kiln`;
    }
    if (o.migrate ?? !o.databaseUrl) await migrate(this.dbUrl, log);
    this.appDbUrls = await this.chooseAppDbUrls(log);
    if (o.redis !== false) {
      if (typeof o.redis === "string") this.redisUrl = o.redis;
      else {
        const redis: RedisHandle = await startRedis({ dataDir: path.join(this.dataDir, "redis") });
        this.stops.push(redis.stop);
        this.redisUrl = redis.url;
      }
    }
    if (o.s3 !== false) {
      const dataDir = path.join(this.dataDir, "s3");
      const s3 =
        o.s3 === "own-process" ? await startS3Process({ dataDir }) : await startS3({ dataDir, bucket: "kiln" });
      this.stops.push(s3.stop);
      const { stop: _stop, ...info } = s3;
      this.s3 = info;
    }
    if (o.git) {
      this.git = await startGitServer({ rootDir: path.join(this.dataDir, "git") });
      const git = this.git;
      this.stops.push(() => git.stop());
    }
    if (o.registry) {
      log("starting a local OCI registry and publishing the base image");
      this.registry = await startRegistry({ dataDir: path.join(this.dataDir, "registry") });
      this.stops.push(this.registry.stop);
      this.baseImage = await publishBaseImage({ registry: this.registry.host });
      // The embedded registry is the platform's own: short names (kiln/node:24) resolve there (ADR 0040).
      this.env.KILN_REGISTRIES ??= JSON.stringify({ [this.registry.host]: { platform: true } });
      this.env.KILN_POOL_IMAGES ??= JSON.stringify({ default: this.baseImage.ref });
      log(`base image ${this.baseImage.ref} = ${this.baseImage.manifestDigest}`);
    }
    // Without a registry there is no image to give a job that names none: the platform's pools
    // declare the host as their image, on purpose and recorded (issue 30), instead of the workers
    // refusing every such job (image.none_for_pool).
    this.env.KILN_POOL_IMAGES ??= JSON.stringify({ "*": "host" });
    this.attestationKeyFile = await ensureAttestationKey(path.join(this.dataDir, "attestor", "attestation-key.pem"));
    await this.ensureSecretsKek();
    this.db = createDb({ url: this.dbUrl, max: o.dbPoolSize ?? 4 });
    const devPool = o.developmentPool === undefined ? "default" : o.developmentPool;
    if (devPool) await configureDevelopmentPool(this.db, devPool, o.untrustedOnProcess ?? false);
  }

  private async chooseAppDbUrls(log: (m: string) => void): Promise<AppRoleUrls> {
    const roles = this.opts.appRoles ?? true;
    if (typeof roles === "object") return roles;
    const owner = { web: this.dbUrl, workers: this.dbUrl };
    if (!roles) return owner;
    const urls = await ensureAppLoginRoles(this.dbUrl);
    if (!urls) log("the database roles kiln_web/kiln_workers are unavailable: web and workers connect as the owner");
    return urls ?? owner;
  }

  /**
   * The secrets KEK (ADR 0025): 32 random bytes, base64, mode 0600, in the data directory unless
   * KILN_SECRETS_KEK_FILE is given; kept across restarts of a durable data directory.
   */
  private async ensureSecretsKek(): Promise<void> {
    if (this.env.KILN_SECRETS_KEK_FILE) return;
    const file = path.join(this.dataDir, "secrets.kek");
    if (!existsSync(file))
      await writeFile(file, `${randomBytes(32).toString("base64")}\n`, { mode: 0o600, flag: "wx" });
    this.env.KILN_SECRETS_KEK_FILE = file;
  }

  /** (Re)starts the embedded PostgreSQL on the same data directory and port. */
  async startPostgres(): Promise<void> {
    const fast = (this.opts.postgres ?? "fast") === "fast";
    this.pg = await startPostgres({
      dataDir: path.join(this.dataDir, "postgres"),
      // The first start picks a free port (retrying if it is taken meanwhile); restarts reuse it.
      ...(this.postgresPort ? { port: this.postgresPort } : {}),
      // A clean stop (fast shutdown) checkpoints, so durability is not under test with "fast".
      ...(fast ? { initdbFlags: ["--no-sync"] } : {}),
      postgresFlags: [
        ...(fast ? ["-c", "fsync=off", "-c", "full_page_writes=off", "-c", "max_connections=300"] : []),
        ...(this.opts.postgresFlags ?? []),
      ],
    });
    this.postgresPort = Number(new URL(this.pg.url).port);
  }

  /** Fast shutdown of the embedded PostgreSQL: every session is cut, nothing is lost. */
  async stopPostgres(): Promise<void> {
    await this.pg?.stop();
    this.pg = null;
  }

  /** The environment of a process: ours, the platform's services, `env`, then the process's own. */
  processEnv(name: string, own: Record<string, string> = {}): Record<string, string | undefined> {
    const env: Record<string, string | undefined> = {
      ...process.env,
      DATABASE_URL: this.dbUrl,
      KILN_DATA_DIR: path.join(this.dataDir, "data"),
      // Local repositories (docs/adr/0017): the git server (loopback) and file:// repos under the
      // data dir (npm run up's demo repo). Off by default in the apps themselves.
      KILN_LOCAL_REPOS_ROOT: this.dataDir,
      NEXT_TELEMETRY_DISABLED: "1",
      // Names every PostgreSQL session after its process (pg_stat_activity.application_name).
      PGAPPNAME: name,
      ...(this.redisUrl ? { REDIS_URL: this.redisUrl } : {}),
      ...(this.s3 ? s3Env(this.s3) : {}),
      ...this.env,
      ...own,
    };
    // The signing key reaches only a process that names it itself (the workers): never the web
    // app, a host agent or anything they start, even if this process's own environment has it.
    if (!own.KILN_ATTESTATION_KEY_FILE) delete env.KILN_ATTESTATION_KEY_FILE;
    return env;
  }

  /** Starts any program as a managed process (restartable, signalled by pid, output kept). */
  launch(name: string, spec: Omit<ProcessSpec, "env"> & { env?: Record<string, string> }): ManagedProc {
    return this.procs.launch(name, {
      stopSignal: this.opts.stopSignal,
      ...spec,
      env: this.processEnv(name, spec.env),
    });
  }

  /** The production web server (`next start`); resolves when /healthz answers. */
  async startWeb(name = "web", o: WebOptions = {}): Promise<ManagedProc> {
    const port = this.webPorts.get(name) ?? o.port ?? (await freePort());
    this.webPorts.set(name, port);
    const p = this.launch(name, {
      cmd: process.execPath,
      args: [...(o.nodeFlags ?? []), NEXT_BIN, "start", "-p", String(port), "-H", "127.0.0.1"],
      cwd: path.join(REPO_ROOT, "apps/web"),
      env: { DATABASE_URL: this.appDbUrls.web, ...o.env },
      ...(o.stopSignal ? { stopSignal: o.stopSignal } : {}),
    });
    await this.waitHealthy(name, o.healthTimeoutMs ?? 90_000);
    return p;
  }

  startWorkers(name = "workers", env?: Record<string, string>): ManagedProc {
    // `node --import tsx` rather than the tsx wrapper: one OS process, so signals by pid reach it.
    return this.launch(name, {
      cmd: process.execPath,
      args: ["--import", "tsx", "apps/workers/src/index.ts"],
      cwd: REPO_ROOT,
      env: { DATABASE_URL: this.appDbUrls.workers, KILN_ATTESTATION_KEY_FILE: this.attestationKeyFile, ...env },
    });
  }

  /** One host agent with a host credential; its work dir is <dataDir>/<name>. */
  startAgent(name: string, token: string, o: AgentOptions = {}): ManagedProc {
    return this.launch(name, {
      cmd: process.execPath,
      args: ["--import", "tsx", "apps/host-agent/src/index.ts"],
      cwd: REPO_ROOT,
      env: {
        KILN_CONTROL_URL: o.controlUrl ?? this.baseUrl(o.web),
        KILN_AGENT_TOKEN: token,
        KILN_WORK_DIR: path.join(this.dataDir, name),
        ...(this.opts.agentHostnames ? { KILN_HOSTNAME: name } : {}),
        ...(o.driver ? { KILN_SANDBOX_DRIVER: o.driver } : {}),
        ...this.opts.agentEnv,
        ...o.env,
      },
      ...(o.onStdoutLine ? { onStdoutLine: o.onStdoutLine } : {}),
    });
  }

  proc(name: string): ManagedProc {
    return this.procs.get(name);
  }

  names(): string[] {
    return this.procs.names();
  }

  signal(name: string, sig: NodeJS.Signals): Promise<void> {
    return this.procs.signal(name, sig);
  }

  /** Starts the named process again as it was; a web process is awaited healthy. */
  async restart(name: string): Promise<ManagedProc> {
    const p = await this.procs.restart(name);
    if (this.webPorts.has(name)) await this.waitHealthy(name, 90_000);
    return p;
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
    return [...this.webPorts].filter(([name]) => this.procs.get(name).alive()).map(([, port]) => port);
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
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error(`${web} not healthy within ${timeoutMs} ms\n${this.logs([web])}`);
  }

  logs(names?: string[], tail?: number): string {
    return this.procs.logs(names, tail);
  }

  dumpLogs(dir: string): Promise<void> {
    return this.procs.dumpLogs(dir);
  }

  /** Stops the apps, then the services; removes the data dir if the platform made it. */
  async stop(): Promise<void> {
    await this.procs.stopAll();
    await this.db?.$disconnect().catch(() => undefined);
    // The Db's own pg pool too: an idle client of it, cut by the server's shutdown, would crash us.
    if (this.db)
      await sqlPool(this.db)
        .end()
        .catch(() => undefined);
    for (const stop of this.stops.reverse()) await stop().catch(() => undefined);
    await this.stopPostgres().catch(() => undefined);
    // A step orphaned by a killed agent may still be writing under the data dir for a moment.
    if (this.ownsDataDir) {
      await unmountUnder(this.dataDir);
      await rm(this.dataDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
    }
  }
}

/** Whether `registry: true` can work here (apt-get install docker-registry busybox-static). */
export function registryAvailable(): boolean {
  return existsSync(REGISTRY_BIN) && existsSync(BUSYBOX);
}

/** Starts the platform's backing services (see Platform.start); apps are started by the caller. */
export async function startPlatform(opts: PlatformOptions = {}): Promise<Platform> {
  const platform = new Platform(opts);
  try {
    await platform.start();
  } catch (err) {
    await platform.stop();
    throw err;
  }
  return platform;
}

async function migrate(url: string, log: (m: string) => void): Promise<void> {
  await ensureDatabase(url);
  await migrateDatabase(url, log);
  // pg-boss's schema, created once here so web and workers can start in any order.
  const boss = new PgBoss({ connectionString: url, max: 2 });
  await boss.start();
  await boss.stop({ graceful: false, close: true });
  // pg-boss's tables did not exist when migration 0029 granted the roles their rights.
  await grantAppRoles(url);
}

/**
 * Configures a development pool unless an operator already configured that pool (an existing row
 * wins: a harness never overrides a real policy). Raw SQL because testkit sits below the engine; the
 * change is audited in pool_change like the engine's setPoolPolicy.
 */
async function configureDevelopmentPool(db: Db, name: string, untrustedOnProcess: boolean): Promise<void> {
  const after = JSON.stringify({
    min_isolation: "process",
    admits_untrusted: true,
    untrusted_on_process: untrustedOnProcess,
    owner_org_id: null,
    development: true,
  });
  await sqlPool(db).query(
    `WITH ins AS (
       INSERT INTO pool (name, min_isolation, admits_untrusted, untrusted_on_process, development, updated_by)
       VALUES ($1, 'process', true, $2, true, 'platform-harness') ON CONFLICT (name) DO NOTHING RETURNING name)
     INSERT INTO pool_change (pool, actor, before, after) SELECT name, 'platform-harness', NULL, $3::jsonb FROM ins`,
    [name, untrustedOnProcess, after],
  );
}

/** A P-256 key for the attestor (PKCS#8 PEM, 0600 in a 0700 directory), kept across restarts. */
async function ensureAttestationKey(file: string): Promise<string> {
  if (existsSync(file)) return file;
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  await writeFile(file, privateKey.export({ type: "pkcs8", format: "pem" }), { mode: 0o600 });
  await chmod(file, 0o600);
  return file;
}
