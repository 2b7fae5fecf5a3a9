// Saves the job's cache after its steps succeeded, for trusted runs only: pack the declared paths
// into the agent's spool, open the save (the control plane refuses untrusted runs with a named
// reason and answers at once when the key is already bound), PUT the immutable blob to its
// presigned URL, and ask the control plane to verify and bind it first-writer-wins.
import { rm } from "node:fs/promises";
import { decideCacheWrite } from "@kiln/domain";
import { callControl } from "../artifacts/index.ts";
import { putFileRange } from "../artifacts/index.ts";
import { errorMessage } from "@kiln/logger";
import { monotonicNow } from "../timing.ts";
import type { CacheContext, CacheFailure, InputDigest } from "./cache-context.ts";
import { packCache } from "./pack-cache.ts";
import { archiveContainsSecret, CACHE_REFUSED_SECRET } from "./secret-scan.ts";

const UNTRUSTED_REFUSAL = "cache write refused: untrusted run";

export type SaveOutcome =
  | { result: "saved" | "already_bound" | "conflict"; bytes: number; ms: number; key: string }
  | { result: "refused" | "skipped" | "failed"; reason: string; bytes: number; ms: number }
  | CacheFailure;

export async function saveCache(ctx: CacheContext, inputs: InputDigest[], spoolFile: string): Promise<SaveOutcome> {
  const started = monotonicNow();
  const ms = () => Math.round(monotonicNow() - started);
  const cache = ctx.ticket.job.cache;
  if (!cache) return { result: "skipped", reason: "no cache declared", bytes: 0, ms: 0 };
  // The control plane enforces the same rule; checking first saves packing bytes nobody may keep.
  if (!decideCacheWrite(ctx.ticket.trustClass).allowed)
    return { result: "refused", reason: UNTRUSTED_REFUSAL, bytes: 0, ms: ms() };
  try {
    const packed = await packCache(ctx.workspaceDir, cache.paths, spoolFile, {
      maxBytes: ctx.limits.maxBytes,
      maxEntries: ctx.limits.maxEntries,
    });
    if (!packed.ok) return { result: "skipped", reason: packed.reason, bytes: 0, ms: ms() };
    // Before anything is offered: the blob would outlive the job and be restored by other runs.
    if (await archiveContainsSecret(spoolFile, ctx.secretValues))
      return {
        result: "refused",
        reason: `cache write refused: ${CACHE_REFUSED_SECRET}: the archive contains a secret value of this job`,
        bytes: 0,
        ms: ms(),
      };
    const { jobId, jobToken, epoch } = ctx.ticket;
    const opened = await callControl(
      "open cache save",
      (s) =>
        ctx.client.openCacheSave(
          jobId,
          jobToken,
          {
            epoch,
            inputs,
            size_bytes: packed.sizeBytes,
            sha256: packed.sha256,
            unpacked_bytes: packed.unpackedBytes,
            entry_count: packed.entryCount,
          },
          { timeoutMs: 30_000, signal: s },
        ),
      { signal: ctx.signal, log: ctx.log, attempts: 3 },
    );
    if (!opened.ok) {
      if (opened.failure.kind !== "error") return { failure: opened.failure };
      const refused = opened.failure.code === "CACHE.WRITE_REFUSED";
      return { result: refused ? "refused" : "failed", reason: opened.failure.message, bytes: 0, ms: ms() };
    }
    const o = opened.data;
    if (o.state !== "upload") {
      if (o.state === "already_bound") await keepLocally(ctx, spoolFile, packed.sha256);
      return { result: o.state, bytes: 0, ms: ms(), key: o.key };
    }
    await putFileRange(o.url, spoolFile, 0, packed.sizeBytes, ctx.signal);
    const done = await callControl(
      "complete cache save",
      (s) => ctx.client.completeCacheSave(jobId, jobToken, o.entry_id, epoch, { timeoutMs: 600_000, signal: s }),
      {
        signal: ctx.signal,
        log: ctx.log,
        attempts: 3,
      },
    );
    if (!done.ok) {
      if (done.failure.kind !== "error") return { failure: done.failure };
      return { result: "failed", reason: done.failure.message, bytes: packed.sizeBytes, ms: ms() };
    }
    const state = done.data.state === "bound" ? "saved" : done.data.state;
    if (state !== "conflict") await keepLocally(ctx, spoolFile, packed.sha256);
    return { result: state, bytes: packed.sizeBytes, ms: ms(), key: done.data.key };
  } catch (err) {
    if (ctx.signal.aborted) return { failure: { kind: "aborted" } };
    return { result: "failed", reason: errorMessage(err), bytes: 0, ms: ms() };
  } finally {
    await rm(spoolFile, { force: true });
  }
}

/** Only bytes whose digest the control plane holds bound: the local tier never holds anything else. */
async function keepLocally(ctx: CacheContext, file: string, sha256: string): Promise<void> {
  if (!ctx.localTier) return;
  await ctx.localTier
    .keep(file, sha256)
    .catch((err: unknown) =>
      ctx.log.warn("could not keep the archive in the node-local cache", { error: errorMessage(err) }),
    );
}
