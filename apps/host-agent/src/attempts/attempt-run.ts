// One claimed attempt from ticket to completion report:
//   heartbeat + watchdog -> sandbox -> checkout -> steps -> destroy (always) -> report.
// Interruptions (cancel, timeout, fencing, lost lease, agent shutdown) arrive as stop(reason) at
// any point; the ranked reason, not the steps' exit codes, then decides what is reported.
import type { SourcePolicy } from "@kiln/oci";
import type { ControlClient, JobTicket } from "../control-client.ts";
import { HeartbeatLoop } from "../heartbeat-loop.ts";
import { ArtifactTransfer } from "../artifacts/index.ts";
import { CacheTransfer, DEFAULT_CACHE_LIMITS, type CacheHostConfig } from "../caches/index.ts";
import { openAttemptEgress, type AttemptEgress, type EgressProxy } from "../egress/index.ts";
import { openIdTokenEndpoint, type IdTokenEndpoint } from "../identity/index.ts";
import type { ImagePreparer } from "../images/index.ts";
import { errorMessage, type Logger } from "@kiln/logger";
import { LogShipper, type LogShipperConfig } from "../logs/index.ts";
import type { Sandbox, SandboxDriver } from "../sandboxes/index.ts";
import type { SandboxSpec } from "../sandboxes/index.ts";
import { fetchJobSecrets, NO_SECRETS, type JobSecrets, type SecretsResult } from "../secrets/index.ts";
import { fetchSourceCredential } from "../source/index.ts";
import { monotonicNow, wireMs, type MonotonicClock } from "../timing.ts";
import { Watchdog } from "../watchdog.ts";
import { checkoutPhase } from "./attempt-checkout.ts";
import { reportCompletion } from "./completion-reporter.ts";
import { prepareJobImage } from "./prepare-image.ts";
import { runSteps } from "./run-steps.ts";
import { buildStepEnv } from "./step-env.ts";
import {
  killsAtOnce,
  outranks,
  overridesFinishedWork,
  platformFailure,
  SUCCESS,
  verdictForStop,
  type StopReason,
  type Verdict,
} from "../shared/verdict.ts";

// setTimeout silently turns anything above 2^31-1 ms into 1 ms.
const MAX_TIMER_MS = 2 ** 31 - 1;
// On agent shutdown the whole stop has a ~5 s budget; the log gets part of it.
const SHUTDOWN_LOG_DRAIN_MS = 2_000;

export interface AttemptDeps {
  client: ControlClient;
  driver: SandboxDriver;
  logger: Logger;
  cancelGraceMs: number;
  logs: LogShipperConfig & { drainMs: number };
  /** Mediated egress (issue 3): absent, sandboxes get no way out at all. */
  egress?: EgressProxy;
  /** Host-local git mirrors for checkouts (source/git-checkout.ts); without it every checkout asks the forge. */
  gitMirrorDir?: string;
  /** KILN_LOCAL_REPOS_ROOT: which clone URLs a checkout may fetch from (docs/adr/0017). */
  source: SourcePolicy;
  /** Pulls and unpacks pinned job images (ADR 0012); without it images are not prepared. */
  images?: ImagePreparer;
  /** Build caches (issue 8); without it caches are restored and saved without a node-local tier. */
  caches?: CacheHostConfig;
  now?: MonotonicClock;
}

export class AttemptRun {
  private readonly now: MonotonicClock;
  private readonly log: Logger;
  private readonly abort = new AbortController();
  private sandbox: Sandbox | null = null;
  private destroyed: Promise<boolean> | null = null;
  private stopReason: StopReason | null = null;
  private concluded = false;
  private timers: NodeJS.Timeout[] = [];
  private firstStepAt: number | null = null;
  private executionMs = 0;
  private imageMs = 0;
  private releaseImage: (() => void) | null = null;
  private artifacts: ArtifactTransfer | null = null;
  private egress: AttemptEgress | null = null;
  private secrets: JobSecrets = NO_SECRETS;
  /** The steps' ID token endpoint (docs/adr/0024), on the egress listener: none without egress. */
  private readonly idTokens: IdTokenEndpoint | null;
  private readonly logs: LogShipper;

  constructor(
    private readonly ticket: JobTicket,
    /** Monotonic time the claim response arrived: the start of dispatch_ms and of the lease. */
    private readonly claimedAt: number,
    private readonly deps: AttemptDeps,
  ) {
    this.now = deps.now ?? monotonicNow;
    this.log = deps.logger;
    // Every attempt ships and seals a log, even one that fails before its first step.
    const { client } = deps;
    const { jobId, jobToken } = ticket;
    this.idTokens = deps.egress ? openIdTokenEndpoint({ client, ticket, log: this.log }) : null;
    this.logs = new LogShipper(
      deps.logs,
      { attemptId: ticket.attemptId, epoch: ticket.epoch, env: ticket.job.env },
      {
        append: (batch, signal) =>
          client.appendLogs(
            jobId,
            jobToken,
            { epoch: batch.epoch, chunks: batch.chunks.map((c) => c.identity) },
            batch.chunks.map((c) => c.data),
            { timeoutMs: 30_000, signal },
          ),
        seal: (body, signal) => client.sealLog(jobId, jobToken, body, { timeoutMs: 15_000, signal }),
      },
      this.log,
    );
  }

  async run(): Promise<void> {
    const watchdog = new Watchdog({
      ttlMs: this.ticket.leaseTtlMs,
      now: this.now,
      aliveSince: this.claimedAt,
      onExpire: () => this.stop("lease_lost"),
    });
    const heartbeat = new HeartbeatLoop(
      this.deps.client,
      this.ticket,
      {
        onAlive: (sentAt) => watchdog.feed(sentAt),
        onCancelRequested: () => this.stop("cancel"),
        onFenced: (code) => this.stop("fenced", code),
      },
      this.log,
      this.now,
    );
    watchdog.start();
    heartbeat.start();
    let verdict: Verdict | null;
    let sandboxDestroyed: boolean;
    let setupEndedAt: number;
    try {
      verdict = await this.execute(heartbeat);
    } catch (err) {
      this.log.error("attempt failed inside the agent", { error: errorMessage(err) });
      verdict = platformFailure("agent.internal_error", errorMessage(err));
    } finally {
      setupEndedAt = this.now();
      this.concluded = true;
      // No step runs any more: the request token is dead before the sandbox is.
      this.idTokens?.close();
      for (const t of this.timers) clearTimeout(t);
      // Destroy before reporting: once the control plane hears "done" it may hand the next job
      // to this host, and nothing of this one may still exist by then.
      let mark = this.now();
      sandboxDestroyed = await this.destroySandbox();
      mark = this.lap("destroy", mark);
      // Its listener dies with the sandbox; the decisions are reported while the lease still lives.
      await this.egress
        ?.close()
        .catch((err: unknown) => this.log.error("egress close failed", { error: errorMessage(err) }));
      mark = this.lap("egress_close", mark);
      // The rootfs may be evicted from the image cache only once no sandbox uses it.
      if (sandboxDestroyed) this.releaseImage?.();
      // While the heartbeat still renews the lease: ingest and seal need a live attempt.
      await this.settleLogs();
      this.lap("settle_logs", mark);
      heartbeat.stop();
      watchdog.stop();
    }
    const reportStarted = this.now();
    await this.report(verdict, sandboxDestroyed, setupEndedAt);
    this.lap("report", reportStarted);
    // Where an attempt's own time went, for finding the slow part of a short job.
    this.log.info("attempt timings", { ms: this.laps });
  }

  private readonly laps: Record<string, number> = {};

  /** Records `name` as the time since `since`; returns now, the next lap's start. */
  private lap(name: string, since: number): number {
    const now = this.now();
    this.laps[name] = Math.round(now - since);
    return now;
  }

  /** Interrupts the attempt. Safe to call at any time, any number of times. */
  stop(reason: StopReason, detail?: string): void {
    if (this.concluded && !overridesFinishedWork(reason)) return;
    if (!outranks(reason, this.stopReason)) return;
    const previous = this.stopReason;
    this.stopReason = reason;
    this.log.warn("stopping attempt", {
      reason,
      ...(detail ? { detail } : {}),
      ...(previous ? { previous_reason: previous } : {}),
    });
    this.abort.abort();
    if (killsAtOnce(reason)) {
      // Fenced or lease lost: another agent may already own this job. Kill and wipe now, and mint
      // nothing more for it (the control plane refuses too; this answers without asking).
      this.idTokens?.close();
      this.sandbox?.kill("SIGKILL");
      void this.destroySandbox();
      this.logs.abandon(reason);
    } else if (previous === null) {
      this.terminateGracefully();
    }
  }

  private async execute(heartbeat: HeartbeatLoop): Promise<Verdict | null> {
    this.artifacts = new ArtifactTransfer({
      client: this.deps.client,
      ticket: this.ticket,
      log: this.log,
      signal: this.abort.signal,
      onStop: (r, d) => this.stop(r, d),
    });
    this.warnAboutWeakIsolation();
    if (this.abort.signal.aborted) return null;
    // Asked at once, in parallel with image, sandbox and checkout: the broker's round trip and its
    // audit commit stay off the path to the first step (bench/secrets).
    const secrets = fetchJobSecrets({
      client: this.deps.client,
      ticket: this.ticket,
      log: this.log,
      signal: this.abort.signal,
      writeLogLine: (line) => this.logs.stderr(Buffer.from(`${line}\n`)),
    });
    // The repo's forge credential for a private checkout (issue 28), asked in parallel too.
    const sourceCredential = fetchSourceCredential({
      client: this.deps.client,
      ticket: this.ticket,
      log: this.log,
      signal: this.abort.signal,
    });
    const image = await this.prepareImage(heartbeat);
    if ("verdict" in image) return image.verdict;
    this.mark = this.now();
    const opened = await this.openSandbox(image.rootfs);
    if ("verdict" in opened) return opened.verdict;
    const { sandbox } = opened;
    if (this.abort.signal.aborted) return null;
    const checkedOut = await checkoutPhase({
      ticket: this.ticket,
      sandbox,
      source: this.deps.source,
      gitMirrorDir: this.deps.gitMirrorDir,
      signal: this.abort.signal,
      logs: this.logs,
      sourceCredential,
      stop: (r, d) => this.stop(r, d),
    });
    if (checkedOut !== "ok") return checkedOut;
    this.phaseDone("checkout");
    const secretsReady = this.adoptSecrets(await secrets);
    if (secretsReady !== "ok") return secretsReady;
    this.phaseDone("secrets");
    return this.runJob(sandbox, this.artifacts, heartbeat);
  }

  /** Where the current setup phase began, for the attempt's timings. */
  private mark = 0;

  /** Records the phase that began at `mark` as `name`; the next one begins now. */
  private phaseDone(name: string): void {
    this.mark = this.lap(name, this.mark);
  }

  /** The attempt's egress listener, then its sandbox; timed into the image phase. */
  private async openSandbox(rootfs: SandboxSpec["rootfs"]): Promise<{ sandbox: Sandbox } | { verdict: Verdict }> {
    const { job } = this.ticket;
    try {
      // Before the sandbox: drivers look the attempt's egress listener up while they build it.
      if (this.deps.egress) this.egress = await this.openEgress(this.deps.egress);
      this.phaseDone("egress_open");
    } catch (err) {
      return { verdict: platformFailure("egress.setup_failed", errorMessage(err)) };
    }
    let sandbox: Sandbox;
    try {
      const createStartedAt = this.now();
      sandbox = await this.deps.driver.create({
        attemptId: this.ticket.attemptId,
        image: job.image,
        rootfs,
        ...(job.size ? { size: job.size } : {}),
      });
      this.sandbox = sandbox;
      // Sandbox preparation (microVM boot or warm-pool restore) belongs to the image phase too.
      this.imageMs += this.now() - createStartedAt;
      this.phaseDone("sandbox_create");
    } catch (err) {
      return { verdict: platformFailure("sandbox.create_failed", errorMessage(err)) };
    }
    const { isolation } = sandbox;
    this.log.info("sandbox created", { isolation: isolation.level, isolation_detail: isolation.detail });
    return { sandbox };
  }

  /** Restores caches and artifacts, runs the steps, then publishes artifacts and saves caches. */
  private async runJob(
    sandbox: Sandbox,
    artifacts: ArtifactTransfer,
    heartbeat: HeartbeatLoop,
  ): Promise<Verdict | null> {
    // Inputs are verified before any step can see them; outputs are published only after success.
    const caches = new CacheTransfer({
      client: this.deps.client,
      ticket: this.ticket,
      log: this.log,
      signal: this.abort.signal,
      onStop: (r, d) => this.stop(r, d),
      writeLogLine: (line) => this.logs.stderr(Buffer.from(`${line}\n`)),
      config: this.deps.caches ?? { localTier: null, limits: DEFAULT_CACHE_LIMITS },
      secretValues: () => this.secrets.values,
    });
    // Straight after the checkout: the key hashes the inputs as the pinned commit has them, before an
    // artifact restore or a step could change them. A miss is never a failure: the steps rebuild.
    if ((await caches.restore(sandbox)) === null) return null;
    const restored = await artifacts.restoreAll(sandbox);
    if (restored !== "ok") return restored;
    this.phaseDone("restore");
    const verdict = await runSteps({
      ticket: this.ticket,
      sandbox,
      env: buildStepEnv(this.ticket, sandbox.paths, this.secrets.env, this.idTokens?.requestToken),
      logs: this.logs,
      log: this.log,
      signal: this.abort.signal,
      now: this.now,
      claimedAt: this.claimedAt,
      onFirstStep: () => this.markStarted(heartbeat),
      onStepRan: (ms) => {
        this.executionMs += ms;
      },
    });
    this.phaseDone("steps");
    if (verdict !== SUCCESS) return verdict;
    const published = await artifacts.publishAll(sandbox);
    if (published !== "ok") return published;
    if ((await caches.save(sandbox, this.ticket.job.artifacts.publish.length > 0)) === null) return null;
    return SUCCESS;
  }

  /** Takes the broker's answer: masks the values from here on, or says why the job cannot run. */
  private adoptSecrets(r: SecretsResult): "ok" | Verdict | null {
    switch (r.kind) {
      case "ready":
        this.secrets = r.secrets;
        this.logs.maskSecrets(r.secrets.values);
        return "ok";
      case "blocked":
        return r.verdict;
      case "failed":
        if (r.failure.kind === "fenced") this.stop("fenced", r.failure.code);
        else if (r.failure.kind === "cancelled") this.stop("cancel");
        if (r.failure.kind !== "error") return null;
        return platformFailure("secrets.unavailable", `the secret broker did not answer: ${r.failure.message}`);
    }
  }

  /** The image phase (prepare-image.ts); the attempt keeps its time and its hold on the image. */
  private async prepareImage(
    heartbeat: HeartbeatLoop,
  ): Promise<{ rootfs: SandboxSpec["rootfs"] } | { verdict: Verdict | null }> {
    const prepared = await prepareJobImage({
      ticket: this.ticket,
      images: this.deps.images,
      heartbeat,
      signal: this.abort.signal,
      now: this.now,
      logs: this.logs,
      log: this.log,
    });
    if (prepared.release) this.releaseImage = prepared.release;
    if (prepared.imageMs !== undefined) this.imageMs = prepared.imageMs;
    return prepared.outcome;
  }

  private openEgress(proxy: EgressProxy): Promise<AttemptEgress> {
    return openAttemptEgress({
      proxy,
      client: this.deps.client,
      ticket: this.ticket,
      log: this.log,
      // Both drivers dial a unix socket: the process driver's forwarder from its namespace, and the
      // microvm relay (QEMU guestfwd cmd:) through the VM's egress link (sandboxes/microvm/egress-relay.ts).
      listen: "unix",
      writeLogLine: (line) => this.logs.stderr(Buffer.from(`${line}\n`)),
      ...(this.idTokens ? { idTokens: this.idTokens } : {}),
    });
  }

  /** Ships what is left and seals the log; bounded, so a dead control plane cannot hold the slot. */
  private async settleLogs(): Promise<void> {
    const reason = this.stopReason;
    const deadlineMs =
      reason && killsAtOnce(reason) ? 0 : reason === "shutdown" ? SHUTDOWN_LOG_DRAIN_MS : this.deps.logs.drainMs;
    try {
      await this.logs.finish(deadlineMs);
    } catch (err) {
      this.log.error("log shipping failed", { error: errorMessage(err) });
    }
  }

  /** First step about to start: report dispatch time and arm the job timeout. */
  private markStarted(heartbeat: HeartbeatLoop): void {
    const at = this.now();
    this.firstStepAt = at;
    heartbeat.reportPhase({
      dispatch_ms: wireMs(at - this.claimedAt - this.imageMs),
      image_ms: wireMs(this.imageMs),
      started: true,
    });
    const timeoutMs = Math.min(MAX_TIMER_MS, Math.max(0, this.ticket.job.timeoutMinutes * 60_000));
    this.timers.push(setTimeout(() => this.stop("timeout"), timeoutMs));
  }

  /** SIGTERM the running step, SIGKILL after the grace period; no further step starts (aborted). */
  private terminateGracefully(): void {
    const sandbox = this.sandbox;
    if (!sandbox) return; // still setting up: the abort signal stops the checkout
    sandbox.kill("SIGTERM");
    this.timers.push(setTimeout(() => sandbox.kill("SIGKILL"), this.deps.cancelGraceMs));
  }

  /** True when everything is gone. Memoized: concurrent callers share one teardown. */
  private destroySandbox(): Promise<boolean> {
    const sandbox = this.sandbox;
    if (!sandbox) return Promise.resolve(true);
    this.destroyed ??= sandbox.destroy().then(
      () => {
        this.log.info("sandbox destroyed");
        return true;
      },
      (err: unknown) => {
        this.log.error("sandbox destroy failed", { error: errorMessage(err) });
        return false;
      },
    );
    return this.destroyed;
  }

  private warnAboutWeakIsolation(): void {
    const { driver } = this.deps;
    if (this.ticket.job.image !== null && driver.kind === "process") {
      this.log.warn(
        "the process driver ignores job images: steps run on the host's root filesystem (weaker isolation)",
        { image: this.ticket.job.image },
      );
    }
    if (this.ticket.trustClass === "untrusted" && driver.isolation.level !== "microvm") {
      this.log.warn("untrusted job on a non-microVM sandbox", { isolation: driver.isolation.level });
    }
  }

  private async report(verdict: Verdict | null, sandboxDestroyed: boolean, setupEndedAt: number): Promise<void> {
    const reason = this.stopReason;
    const final = reason ? verdictForStop(reason, { timeoutMinutes: this.ticket.job.timeoutMinutes }) : verdict;
    if (!final) {
      this.log.warn("attempt fenced by the control plane; sandbox destroyed, nothing reported", { reason });
      return;
    }
    const body = {
      epoch: this.ticket.epoch,
      outcome: final.outcome,
      cause: final.cause?.slice(0, 200) ?? null,
      message: final.message?.slice(0, 4000) ?? null,
      exit_code: final.exitCode,
      sandbox_destroyed: sandboxDestroyed,
      phases: {
        image_ms: wireMs(this.imageMs),
        // Image preparation is its own phase: dispatch is the rest of the way to the first step.
        dispatch_ms: wireMs((this.firstStepAt ?? setupEndedAt) - this.claimedAt - this.imageMs),
        execution_ms: wireMs(this.executionMs),
        finalize_ms: wireMs(this.artifacts?.finalizeMs ?? 0),
      },
    };
    // A lost lease is most likely refused (the attempt was re-dispatched); one try is enough.
    await reportCompletion(this.deps.client, this.ticket, body, this.log, reason === "lease_lost" ? 1 : undefined);
  }
}
