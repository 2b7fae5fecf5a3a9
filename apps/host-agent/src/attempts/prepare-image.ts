import { agentProtocol } from "@kiln/domain";
import { errorMessage, type Logger } from "@kiln/logger";
import type { JobTicket } from "../control-client.ts";
import type { HeartbeatLoop } from "../heartbeat-loop.ts";
import { imageFailureVerdict, noShellVerdict, type ImagePreparer } from "../images/index.ts";
import type { LogShipper } from "../logs/index.ts";
import { observeImagePreparation } from "../metrics/index.ts";
import type { SandboxSpec } from "../sandboxes/index.ts";
import type { Verdict } from "../shared/verdict.ts";
import { wireMs, type MonotonicClock } from "../timing.ts";

/** What the image phase is given by its attempt. */
export interface ImagePhase {
  ticket: JobTicket;
  images: ImagePreparer | undefined;
  heartbeat: HeartbeatLoop;
  signal: AbortSignal;
  now: MonotonicClock;
  logs: LogShipper;
  log: Logger;
}

/**
 * The image phase's result: the sandbox's rootfs or the verdict that ends the attempt; the time it
 * took (absent when no image was prepared) and, once an image is held, how to let it go.
 */
export interface PreparedImage {
  outcome: { rootfs: SandboxSpec["rootfs"] } | { verdict: Verdict | null };
  imageMs?: number;
  release?: () => void;
}

/** Pulls, verifies and unpacks the pinned image before the sandbox exists; timed as image_ms. */
export async function prepareJobImage(p: ImagePhase): Promise<PreparedImage> {
  const { image, imageDigest } = p.ticket.job;
  // The job's pool declared the host as its image, on purpose (issue 30): the process driver's
  // host view, recorded on the run as image `host` (the run page and the provenance show it; the
  // job's log stays the step's own bytes). Only the freeze sets it, from the pool.
  if (image === agentProtocol.HOST_IMAGE && !imageDigest) return { outcome: { rootfs: null } };
  if (!image || !imageDigest || !p.images) return { outcome: { rootfs: null } };
  const started = p.now();
  // Held from the moment the cache hands the rootfs out, whatever happens after.
  let release: (() => void) | undefined;
  try {
    const prepared = await p.images.prepareImage({ ref: image, digest: imageDigest, signal: p.signal });
    release = prepared.release;
    const imageMs = p.now() - started;
    const held = { imageMs, release };
    observeImagePreparation("ready", imageMs);
    p.heartbeat.reportPhase({ image_ms: wireMs(imageMs) });
    p.log.info("image ready", {
      image,
      digest: prepared.digest,
      cache_hit: prepared.cacheHit,
      pulled_bytes: prepared.pulledBytes,
      image_ms: wireMs(imageMs),
    });
    if (p.signal.aborted) return { ...held, outcome: { verdict: null } };
    const noShell = await noShellVerdict(image, prepared.rootfsDir);
    if (noShell) p.logs.stderr(Buffer.from(`[kiln] ${noShell.cause}: ${noShell.message}\n`));
    if (noShell) return { ...held, outcome: { verdict: noShell } };
    return { ...held, outcome: { rootfs: { dir: prepared.rootfsDir, digest: prepared.digest } } };
  } catch (err) {
    const imageMs = p.now() - started;
    const held = release ? { imageMs, release } : { imageMs };
    observeImagePreparation("failed", imageMs);
    if (p.signal.aborted) return { ...held, outcome: { verdict: null } };
    const verdict = imageFailureVerdict(image, err);
    p.log.warn("image preparation failed", {
      image,
      digest: imageDigest,
      cause: verdict.cause,
      error: errorMessage(err),
    });
    return { ...held, outcome: { verdict } };
  }
}
