// Restores the job's cache before the first step: node-local tier, then object storage. The bytes
// are verified while they are extracted into an agent-owned staging directory (extract-cache.ts);
// only a fully verified tree is renamed into the workspace. Any failure, timeout or mismatch
// removes everything this restore wrote and is a miss: the job continues from its clean checkout.
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { createReadStream, createWriteStream } from "node:fs";
import http from "node:http";
import https from "node:https";
import { finished } from "node:stream/promises";
import { lstat, mkdir, mkdtemp, realpath, rm } from "node:fs/promises";
import { moveInto } from "../shared/move-into.ts";
import path from "node:path";
import { resolveRestoreTarget } from "../artifacts/index.ts";
import { callControl } from "../artifacts/index.ts";
import { errorMessage } from "@kiln/logger";
import { monotonicNow } from "../timing.ts";
import type { CacheContext, CacheFailure, InputDigest } from "./cache-context.ts";
import { CacheRejected, extractCache } from "./extract-cache.ts";
import { countCacheIntegrityFailure } from "../metrics/index.ts";

export type RestoreOutcome =
  | { result: "hit"; tier: "local" | "remote"; exact: boolean; bytes: number; ms: number; key: string }
  | { result: "miss"; reason: string; ms: number; key: string | null }
  | CacheFailure;

export async function restoreCache(ctx: CacheContext, inputs: InputDigest[]): Promise<RestoreOutcome> {
  const started = monotonicNow();
  const ms = () => Math.round(monotonicNow() - started);
  const cache = ctx.ticket.job.cache;
  if (!cache) return { result: "miss", reason: "no cache declared", ms: 0, key: null };
  const grant = await callControl(
    "request cache restore",
    (s) =>
      ctx.client.requestCacheRestore(
        ctx.ticket.jobId,
        ctx.ticket.jobToken,
        { epoch: ctx.ticket.epoch, inputs },
        { timeoutMs: 30_000, signal: s },
      ),
    {
      signal: ctx.signal,
      log: ctx.log,
      attempts: 3,
    },
  );
  if (!grant.ok) {
    if (grant.failure.kind !== "error") return { failure: grant.failure };
    return {
      result: "miss",
      reason: `the control plane could not look the key up: ${grant.failure.message}`,
      ms: ms(),
      key: null,
    };
  }
  const g = grant.data;
  if (!g.hit) return { result: "miss", reason: "no entry for this key", ms: ms(), key: g.key };
  if (g.unpacked_bytes > ctx.limits.maxBytes || g.entry_count > ctx.limits.maxEntries) {
    return { result: "miss", reason: `the entry is larger than this host's restore budget`, ms: ms(), key: g.key };
  }
  const placed = await restoreEntry(ctx, cache.paths, g);
  if ("failure" in placed) return placed;
  if (placed.ok)
    return { result: "hit", tier: placed.tier, exact: g.exact, bytes: g.unpacked_bytes, ms: ms(), key: g.key };
  return { result: "miss", reason: placed.reason, ms: ms(), key: g.key };
}

export type EntryGrant = { sha256: string; size_bytes: number; url: string };
type TierContext = Pick<CacheContext, "signal" | "workspaceDir" | "scratchDir" | "localTier" | "limits" | "log">;

/**
 * The tiers for one granted entry: the node-local copy when this host has one, else (or when that
 * copy fails verification) object storage, teed into the node-local tier and adopted only once the
 * digest matched. Exported for bench/caches, which times exactly this path.
 */
export async function restoreEntry(
  ctx: TierContext,
  paths: readonly string[],
  g: EntryGrant,
): Promise<{ ok: true; tier: "local" | "remote" } | { ok: false; reason: string } | CacheFailure> {
  const want = {
    paths,
    sizeBytes: g.size_bytes,
    sha256: g.sha256,
    maxBytes: ctx.limits.maxBytes,
    maxEntries: ctx.limits.maxEntries,
  };
  const signal = AbortSignal.any([ctx.signal, AbortSignal.timeout(ctx.limits.timeoutMs)]);
  const reasons: string[] = [];
  const tier = ctx.localTier;
  const local = tier ? await tier.lookup(g.sha256) : null;
  if (local && tier) {
    const r = await attempt(
      ctx,
      want,
      signal,
      () => createReadStream(local, { highWaterMark: 1024 * 1024 }) as AsyncIterable<Buffer>,
    );
    if (r === "ok") return { ok: true, tier: "local" };
    if (ctx.signal.aborted) return { failure: { kind: "aborted" } };
    // A local file that fails verification is never offered again.
    await tier.remove(g.sha256);
    if (r !== "timed out") countCacheIntegrityFailure("local");
    reasons.push(`node-local copy rejected: ${r}`);
  }
  const temp = tier ? tier.tempPath(g.sha256, randomUUID()) : null;
  const r = await attempt(ctx, want, signal, () => download(g.url, signal, temp));
  if (r === "ok") {
    if (tier && temp)
      await tier
        .adopt(temp, g.sha256)
        .catch((err: unknown) =>
          ctx.log.warn("could not keep the archive in the node-local cache", { error: errorMessage(err) }),
        );
    return { ok: true, tier: "remote" };
  }
  if (temp) await rm(temp, { force: true });
  if (ctx.signal.aborted) return { failure: { kind: "aborted" } };
  if (r !== "timed out") countCacheIntegrityFailure("remote");
  reasons.push(`object storage copy rejected: ${r}`);
  return { ok: false, reason: reasons.join("; ") };
}

/** One tier: extract into staging, verify, place. "ok" or why not; nothing is left behind on failure. */
async function attempt(
  ctx: TierContext,
  want: Parameters<typeof extractCache>[2],
  signal: AbortSignal,
  source: () => AsyncIterable<Buffer>,
): Promise<"ok" | string> {
  // Agent-only scratch on the workspace's disk (ADR 0041): what is staged counts against the job's disk.
  const staging = await mkdtemp(path.join(ctx.scratchDir, ".kiln-cache-stage-"));
  const placed: string[] = [];
  try {
    await extractCache(source(), staging, want, signal);
    const workspaceReal = await realpath(ctx.workspaceDir);
    for (const [i, declared] of want.paths.entries()) {
      const target = await resolveRestoreTarget(workspaceReal, declared);
      if (!target.ok) throw new CacheRejected(`cache path ${JSON.stringify(declared)}: ${target.message}`);
      // Restoring over what the checkout put there would mix trees; any doubt is a miss.
      if (await lstat(target.path).catch(() => null))
        throw new CacheRejected(`cache path ${JSON.stringify(declared)} already exists in the workspace`);
      await mkdir(path.dirname(target.path), { recursive: true });
      await moveInto(path.join(staging, String(i)), target.path);
      placed.push(target.path);
    }
    return "ok";
  } catch (err) {
    for (const p of placed) await rm(p, { recursive: true, force: true });
    if (signal.aborted && !ctx.signal.aborted) return "timed out";
    return err instanceof CacheRejected ? err.message : errorMessage(err);
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

/**
 * Streams a presigned GET (node:http: no web-stream layer per chunk); with `keep`, also writes the
 * bytes to the node-local temp file, waiting only when the disk pushes back.
 */
async function* download(url: string, signal: AbortSignal, keep: string | null): AsyncIterable<Buffer> {
  const u = new URL(url);
  const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
    const req = (u.protocol === "https:" ? https : http).get(u, { signal }, resolve);
    req.once("error", reject);
  });
  if (res.statusCode !== 200) {
    res.resume();
    throw new CacheRejected(`object store answered ${res.statusCode ?? 0}`);
  }
  const out = keep ? createWriteStream(keep, { flags: "wx", mode: 0o600 }) : null;
  const closed = out ? finished(out) : null;
  closed?.catch(() => undefined);
  try {
    for await (const chunk of res as AsyncIterable<Buffer>) {
      if (out && !out.write(chunk)) await once(out, "drain", { signal });
      yield chunk;
    }
  } finally {
    out?.end();
    res.destroy();
  }
  // The node-local copy is adopted only after this point, so it must be complete on disk.
  await closed;
}
