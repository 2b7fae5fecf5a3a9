// The attempt's cache hooks (issue 8): restore before the first step, save after the steps (and
// artifact publication) succeeded. A cache never decides the job's outcome: every problem is a
// miss or an unsaved cache, written into the job's log with its reason. Only an interruption or a
// fenced answer from the control plane is handed back to the attempt, which then stops.
import { mkdtemp, rm } from "node:fs/promises";
import path from "node:path";
import { cachePathProblem, decideCacheWrite } from "@kiln/domain";
import type { ControlClient, JobTicket } from "../control-client.ts";
import { errorMessage, type Logger } from "@kiln/logger";
import { type Sandbox, scratchDirOf } from "../sandboxes/index.ts";
import type { StopReason } from "../shared/verdict.ts";
import type { CacheFailure, CacheLimits, InputDigest } from "./cache-context.ts";
import { hashCacheInputs } from "./hash-inputs.ts";
import type { LocalCacheTier } from "./local-tier.ts";
import { restoreCache } from "./restore-cache.ts";
import { saveCache } from "./save-cache.ts";
import { recordCacheRestore, recordCacheSave } from "../metrics/index.ts";

export interface CacheHostConfig {
  /** Node-local tier; null keeps no copies on this host. */
  localTier: LocalCacheTier | null;
  limits: CacheLimits;
}

export const DEFAULT_CACHE_LIMITS: CacheLimits = {
  maxBytes: 10 * 1024 ** 3,
  maxEntries: 1_000_000,
  timeoutMs: 10 * 60_000,
};

export interface CacheTransferDeps {
  client: ControlClient;
  ticket: JobTicket;
  log: Logger;
  signal: AbortSignal;
  onStop: (reason: StopReason, detail?: string) => void;
  /** One line into the job's own log (what the user reads), e.g. why the cache was not written. */
  writeLogLine: (line: string) => void;
  config: CacheHostConfig;
  /** Delivered secret values (issue 16), read when the save packs its archive. */
  secretValues: () => readonly string[];
}

export class CacheTransfer {
  /** Input digests taken from the pinned checkout before the steps; null disables the save. */
  private inputs: InputDigest[] | null = null;
  /** Restored from this exact key: saving would pack the same tree for an answer we already know. */
  private exactHit = false;

  constructor(private readonly deps: CacheTransferDeps) {}

  /** "ok" whether it hit or missed; null when the attempt was interrupted or fenced meanwhile. */
  async restore(sandbox: Sandbox): Promise<"ok" | null> {
    const cache = this.deps.ticket.job.cache;
    if (!cache) return "ok";
    const bad = cache.paths.map((p) => [p, cachePathProblem(p)] as const).find(([, problem]) => problem !== null);
    if (bad) {
      return this.disabled(
        `cache path ${JSON.stringify(bad[0])} ${bad[1]} (this version restores and saves workspace-relative paths only)`,
      );
    }
    const hashed = await hashCacheInputs(sandbox.hostWorkspaceDir, cache.inputs).catch((err: unknown) => ({
      ok: false as const,
      reason: errorMessage(err),
    }));
    if (!hashed.ok) return this.disabled(hashed.reason);
    this.inputs = hashed.digests;
    const r = await restoreCache(this.context(sandbox), hashed.digests);
    if ("failure" in r) return this.interrupted(r);
    recordCacheRestore(r);
    if (r.result === "hit") {
      this.exactHit = r.exact;
      this.line(
        `cache hit (${r.tier === "local" ? "node-local" : "object storage"}${r.exact ? "" : ", newest entry with the same prefix"}): restored ${r.bytes} bytes in ${r.ms} ms`,
      );
    } else {
      this.line(`cache miss: ${r.reason}`);
    }
    this.deps.log.info("cache restore", {
      result: r.result,
      ...(r.result === "hit" ? { tier: r.tier, exact: r.exact, bytes: r.bytes } : { reason: r.reason }),
      ms: r.ms,
      key: r.key,
    });
    await this.report({
      restore:
        r.result === "hit"
          ? { result: "hit", tier: r.tier, exact: r.exact, reason: null, bytes: r.bytes, ms: r.ms }
          : { result: "miss", tier: null, exact: null, reason: r.reason.slice(0, 200), bytes: 0, ms: r.ms },
    });
    return this.deps.signal.aborted ? null : "ok";
  }

  /**
   * After success. The sandbox is killed first so nothing changes the tree while it is packed;
   * `collected` says whether the artifact publisher already copied a microVM's workspace out.
   */
  async save(sandbox: Sandbox, collected: boolean): Promise<"ok" | null> {
    if (!this.deps.ticket.job.cache || this.inputs === null) return "ok";
    // An untrusted run always gets its refusal line, hit or not.
    if (this.exactHit && decideCacheWrite(this.deps.ticket.trustClass).allowed) {
      this.line("cache not saved: it was restored from this exact key");
      await this.report({ save: { result: "skipped", reason: "restored from this exact key", bytes: 0, ms: 0 } });
      return this.deps.signal.aborted ? null : "ok";
    }
    sandbox.kill("SIGKILL");
    if (!collected) {
      try {
        await sandbox.collectWorkspace?.();
      } catch (err) {
        this.line(`cache not saved: the workspace could not be collected: ${errorMessage(err)}`);
        return "ok";
      }
    }
    const spoolDir = await mkdtemp(path.join(scratchDirOf(sandbox), ".kiln-cache-spool-"));
    try {
      const r = await saveCache(this.context(sandbox), this.inputs, path.join(spoolDir, "cache.tar.gz"));
      if ("failure" in r) return this.interrupted(r);
      recordCacheSave(r);
      switch (r.result) {
        case "saved":
          this.line(`cache saved: ${r.bytes} bytes in ${r.ms} ms`);
          break;
        case "already_bound":
          this.line("cache not saved: this key already holds the same bytes");
          break;
        case "conflict":
          this.line(
            "cache not saved: this key already holds other bytes (first writer wins; recorded as a conflict for admins)",
          );
          break;
        case "refused":
          this.line(r.reason);
          break;
        case "skipped":
          this.line(`cache not saved: ${r.reason}`);
          break;
        case "failed":
          this.line(`cache save failed: ${r.reason}`);
          break;
      }
      this.deps.log.info("cache save", {
        result: r.result,
        bytes: r.bytes,
        ms: r.ms,
        ...("reason" in r ? { reason: r.reason } : {}),
      });
      await this.report({
        save: { result: r.result, reason: "reason" in r ? r.reason.slice(0, 200) : null, bytes: r.bytes, ms: r.ms },
      });
      return this.deps.signal.aborted ? null : "ok";
    } finally {
      await rm(spoolDir, { recursive: true, force: true });
    }
  }

  /** The job runs without a cache; the reason goes to its log and to the run page. */
  private async disabled(reason: string): Promise<"ok" | null> {
    this.line(`cache disabled: ${reason}`);
    await this.report({
      restore: {
        result: "miss",
        tier: null,
        exact: null,
        reason: `cache disabled: ${reason}`.slice(0, 200),
        bytes: 0,
        ms: 0,
      },
    });
    return this.deps.signal.aborted ? null : "ok";
  }

  private context(sandbox: Sandbox) {
    const { client, ticket, log, signal, config } = this.deps;
    return {
      client,
      ticket,
      log,
      signal,
      workspaceDir: sandbox.hostWorkspaceDir,
      scratchDir: scratchDirOf(sandbox),
      localTier: config.localTier,
      limits: config.limits,
      secretValues: this.deps.secretValues(),
    };
  }

  private line(text: string): void {
    this.deps.writeLogLine(`[kiln] ${text}`);
  }

  private interrupted(r: CacheFailure): null {
    if (r.failure.kind === "fenced") this.deps.onStop("fenced", r.failure.code);
    else if (r.failure.kind === "cancelled") this.deps.onStop("cancel");
    return null;
  }

  /** Figures for the run page; best effort (one retry), never a reason to fail or stop the job. */
  private async report(body: {
    restore?: Parameters<ControlClient["reportCacheStats"]>[2]["restore"];
    save?: Parameters<ControlClient["reportCacheStats"]>[2]["save"];
  }): Promise<void> {
    const { client, ticket } = this.deps;
    const r = await client.reportCacheStats(
      ticket.jobId,
      ticket.jobToken,
      { epoch: ticket.epoch, ...body },
      { timeoutMs: 10_000, signal: this.deps.signal },
    );
    if (!r.ok)
      this.deps.log.warn("cache stats not recorded", {
        error: r.kind === "http" ? `${r.status} ${r.code}` : r.message,
      });
  }
}
