// The host agent's lifecycle: register, run one claim loop per slot, and shut down cleanly
// (stop claiming, kill + destroy every running job, report them, all within a fixed budget).
import path from "node:path";
import { AgentSession } from "./agent-session.ts";
import { EgressProxy } from "./egress/index.ts";
import { ClaimLoop } from "./claim-loop.ts";
import type { ControlClient } from "./control-client.ts";
import type { AgentEnv } from "./env.ts";
import { ImagePreparer } from "./images/index.ts";
import { LocalCacheTier } from "./caches/index.ts";
import { JobRunner } from "./job-runner.ts";
import { AGENT_PROTOCOL_VERSION, DEFAULT_RUNNER_SIZE } from "@kiln/domain";
import { AGENT_VERSION } from "./version.ts";
import type { Logger } from "@kiln/logger";
import type { SandboxDriver } from "./sandboxes/index.ts";
import { sleep } from "./timing.ts";
import { StatsLoop } from "./fleet/stats-loop.ts";

const SHUTDOWN_BUDGET_MS = 5_000;

export interface HostAgentDeps {
  env: AgentEnv;
  client: ControlClient;
  driver: SandboxDriver;
  logger: Logger;
}

export class HostAgent {
  private readonly shutdown = new AbortController();
  private readonly runner: JobRunner;
  private stopping: Promise<void> | null = null;

  private readonly egress: EgressProxy | null;
  private readonly cacheTier: LocalCacheTier;
  private readonly images: ImagePreparer;
  private stats: StatsLoop | null = null;
  private session: AgentSession | null = null;

  constructor(private readonly deps: HostAgentDeps) {
    this.egress =
      deps.env.KILN_EGRESS === "on"
        ? new EgressProxy({
            // Beside the sandboxes (like the log spool): a short path, since unix socket paths are capped.
            socketDir: path.join(deps.env.KILN_WORK_DIR, ".egress"),
            allowInternalAddresses: deps.env.KILN_EGRESS_ALLOW_INTERNAL === "true",
            logger: deps.logger.child({ component: "egress-proxy" }),
          })
        : null;
    // Beside the sandboxes like the image cache: sandbox teardown and leftover sweeps never touch it.
    this.cacheTier = new LocalCacheTier(path.join(deps.env.KILN_WORK_DIR, ".caches"), deps.env.KILN_CACHE_LOCAL_BYTES);
    this.images = new ImagePreparer({
      // Beside the sandboxes like the log spool: sandbox teardown and leftover sweeps never touch it.
      cacheDir: path.join(deps.env.KILN_WORK_DIR, ".images"),
      cacheBytes: deps.env.KILN_IMAGE_CACHE_BYTES,
      registries: deps.env.KILN_REGISTRIES,
      budget: { maxBytes: deps.env.KILN_IMAGE_MAX_BYTES, maxEntries: deps.env.KILN_IMAGE_MAX_ENTRIES },
      log: deps.logger,
    });
    this.runner = new JobRunner({
      ...(this.egress ? { egress: this.egress } : {}),
      client: deps.client,
      driver: deps.driver,
      logger: deps.logger,
      cancelGraceMs: deps.env.KILN_CANCEL_GRACE_MS,
      // Beside the sandboxes like the image cache: teardown and leftover sweeps never touch it.
      gitMirrorDir: path.join(deps.env.KILN_WORK_DIR, ".git-mirrors"),
      source: { localReposRoot: deps.env.KILN_LOCAL_REPOS_ROOT ?? null },
      images: this.images,
      caches: {
        localTier: this.cacheTier,
        limits: {
          maxBytes: deps.env.KILN_CACHE_MAX_BYTES,
          maxEntries: deps.env.KILN_CACHE_MAX_ENTRIES,
          timeoutMs: deps.env.KILN_CACHE_RESTORE_TIMEOUT_MS,
        },
      },
      logs: {
        flushMs: deps.env.KILN_LOG_FLUSH_MS,
        flushBytes: deps.env.KILN_LOG_FLUSH_BYTES,
        maxBytes: deps.env.KILN_LOG_MAX_BYTES,
        rateBytesPerSec: deps.env.KILN_LOG_RATE_BYTES,
        memoryBytes: deps.env.KILN_LOG_MEMORY_BYTES,
        drainMs: deps.env.KILN_LOG_DRAIN_MS,
        // Beside the sandboxes, not inside one: sandbox teardown and leftover sweeps never touch it.
        spoolDir: path.join(deps.env.KILN_WORK_DIR, ".log-spool"),
      },
    });
  }

  /** Resolves after stop(); rejects (after stopping) when a loop hits a fatal error. */
  async run(): Promise<void> {
    const { env, client, driver, logger } = this.deps;
    await this.announce();
    await this.cacheTier.init();
    const session = new AgentSession(
      client,
      {
        hostname: env.KILN_HOSTNAME,
        capacity: env.KILN_AGENT_SLOTS,
        labels: {
          os: process.platform,
          arch: process.arch,
          resource_class: "small",
          isolation: driver.isolation.level === "none" ? "none" : driver.kind,
        },
        runner_labels: env.KILN_AGENT_LABELS,
        sizes: env.KILN_AGENT_SIZES.length > 0 ? env.KILN_AGENT_SIZES : [DEFAULT_RUNNER_SIZE],
        protocol_version: AGENT_PROTOCOL_VERSION,
        agent_version: AGENT_VERSION,
      },
      logger,
      this.shutdown.signal,
      (res) => this.adoptRegistries(res.registries),
    );
    // Fleet stats run beside the claim loops and never end the agent: they are advisory.
    this.stats = new StatsLoop({
      client,
      session,
      intervalMs: env.KILN_AGENT_STATS_MS,
      gather: () => ({
        agent_version: AGENT_VERSION,
        warm_pool: driver.warmPoolStats?.() ?? { size: 0, hits: 0, misses: 0 },
        slots: { in_use: Math.min(this.runner.activeCount, env.KILN_AGENT_SLOTS), total: env.KILN_AGENT_SLOTS },
      }),
      onReclaim: () => void this.reclaim(),
      logger: logger.child({ component: "fleet-stats" }),
      shutdown: this.shutdown.signal,
    });
    this.session = session;
    const stats = this.stats.run();
    const loops = Array.from({ length: env.KILN_AGENT_SLOTS }, (_, slot) =>
      new ClaimLoop(slot, {
        client,
        session,
        runner: this.runner,
        waitMs: env.KILN_CLAIM_WAIT_MS,
        logger,
        shutdown: this.shutdown.signal,
      }).run(),
    );
    try {
      await Promise.all(loops);
      await stats;
    } catch (err) {
      await this.stop();
      throw err;
    }
  }

  /**
   * The cloud is taking this host back (SIGUSR2, or an operator's notice in a stats answer): like
   * stop(), but running jobs report host.reclaimed, which the control plane re-dispatches to
   * on-demand capacity instead of counting a retry (ADR 0035). run() then resolves: the session ends.
   */
  reclaim(): Promise<void> {
    return this.stop("reclaimed");
  }

  /** Stops claiming and interrupts running jobs; resolves within SHUTDOWN_BUDGET_MS. */
  stop(reason: "shutdown" | "reclaimed" = "shutdown"): Promise<void> {
    this.stopping ??= (async () => {
      this.deps.logger.info("shutting down: no new claims, stopping running jobs", {
        running_jobs: this.runner.activeCount,
        reason,
      });
      this.shutdown.abort();
      await Promise.race([this.runner.shutdown(reason), sleep(SHUTDOWN_BUDGET_MS)]);
      // The session ends with the agent: the fleet view shows the host offline at once.
      await this.stats?.reportEnding(this.session?.id ?? null);
      await this.egress?.close();
      if (this.runner.activeCount > 0)
        this.deps.logger.warn("shutdown budget exhausted with jobs still finishing", {
          running_jobs: this.runner.activeCount,
        });
      // Pre-booted sandboxes (microvm warm pool) die with the agent, never outlive it.
      await this.deps.driver.close?.();
    })();
    return this.stopping;
  }

  /** The control plane's registries, told at each session start (issue 30), under KILN_REGISTRIES. */
  private adoptRegistries(told: Record<string, Record<string, unknown>> | undefined): void {
    if (!told) return;
    const { adopted, rejected } = this.images.adoptRegistries(told);
    this.deps.logger.info("registries from the control plane", { adopted, rejected });
  }

  private async announce(): Promise<void> {
    const { env, driver, logger } = this.deps;
    const removed = await driver.removeLeftovers();
    if (removed > 0) logger.warn("removed sandboxes left behind by an earlier run", { removed });
    if (driver.isolation.level === "none") {
      logger.warn("steps will run as plain host processes without namespaces", {
        isolation_detail: driver.isolation.detail,
      });
    }
    if (env.KILN_WARM_POOL_SIZE > 0 && driver.kind === "process") {
      logger.info("KILN_WARM_POOL_SIZE ignored: the process driver creates sandboxes on demand", {
        warm_pool_size: env.KILN_WARM_POOL_SIZE,
      });
    }
    logger.info("host agent starting", {
      control_url: env.KILN_CONTROL_URL,
      pool: env.KILN_POOL,
      slots: env.KILN_AGENT_SLOTS,
      driver: driver.kind,
      isolation: driver.isolation.level,
      isolation_detail: driver.isolation.detail,
      work_dir: env.KILN_WORK_DIR,
    });
  }
}
