// The attempt's artifact hooks: restore-before-steps and publish-after-success (issue 5). The
// attempt stays in charge: interruptions come in as its abort signal, and a fenced/cancelled answer
// from the control plane is handed back through onStop so the attempt's ranked stop reason decides
// what is reported (fenced: nothing).
import { mkdtemp, rm } from "node:fs/promises";
import path from "node:path";
import { ARTIFACT_USER_CAUSES, type ArtifactCause } from "@kiln/domain";
import type { ControlClient, JobTicket } from "../control-client.ts";
import type { Logger } from "@kiln/logger";
import { type Sandbox, scratchDirOf } from "../sandboxes/index.ts";
import { monotonicNow } from "../timing.ts";
import { platformFailure, type StopReason, type Verdict } from "../shared/verdict.ts";
import type { CallFailure } from "./control-calls.ts";
import { freezeArtifact, type FrozenArtifact } from "./freeze.ts";
import { restoreArtifact } from "./restore-artifact.ts";
import { uploadArtifact } from "./upload-artifact.ts";

export interface ArtifactTransferDeps {
  client: ControlClient;
  ticket: JobTicket;
  log: Logger;
  signal: AbortSignal;
  onStop: (reason: StopReason, detail?: string) => void;
}

export class ArtifactTransfer {
  /** Wall time spent freezing, uploading and sealing outputs: the attempt's finalize_ms. */
  finalizeMs = 0;

  constructor(private readonly deps: ArtifactTransferDeps) {}

  /** Restores every declared input into the workspace; a verdict on failure, null when interrupted. */
  async restoreAll(sandbox: Sandbox): Promise<Verdict | "ok" | null> {
    const { ticket, log, signal } = this.deps;
    if (ticket.job.artifacts.restore.length === 0) return "ok";
    const spoolDir = await this.makeSpool(sandbox);
    try {
      for (const entry of ticket.job.artifacts.restore) {
        const r = await restoreArtifact(entry, { ...this.deps, workspaceDir: sandbox.hostWorkspaceDir, spoolDir });
        if (r.ok) continue;
        if ("cause" in r) return causeVerdict(r.cause, r.message);
        return this.interpret(r.failure, "artifact.download_failed");
      }
      return signal.aborted ? null : "ok";
    } finally {
      await rm(spoolDir, { recursive: true, force: true });
      if (signal.aborted) log.info("artifact restore interrupted");
    }
  }

  /**
   * After the steps succeeded: freeze every declared output, then upload and seal each. The
   * completion report that follows makes the control plane bind them (or refuse them).
   */
  async publishAll(sandbox: Sandbox): Promise<Verdict | "ok" | null> {
    const { ticket, log, signal } = this.deps;
    if (ticket.job.artifacts.publish.length === 0) return "ok";
    const started = monotonicNow();
    // Nothing of the job may still run while outputs are frozen.
    sandbox.kill("SIGKILL");
    const spoolDir = await this.makeSpool(sandbox);
    try {
      // A microVM's steps wrote the guest's workspace, not hostWorkspaceDir: copy it out first.
      try {
        await sandbox.collectWorkspace?.();
      } catch (err) {
        return platformFailure("sandbox.workspace_collect_failed", err instanceof Error ? err.message : String(err));
      }
      const frozen: FrozenArtifact[] = [];
      for (const entry of ticket.job.artifacts.publish) {
        const f = await freezeArtifact(sandbox.hostWorkspaceDir, spoolDir, entry);
        if (!f.ok) return causeVerdict(f.cause, f.message);
        frozen.push(f.artifact);
      }
      for (const a of frozen) {
        if (signal.aborted) return null;
        const r = await uploadArtifact(a, this.deps);
        if (!r.ok) return this.interpret(r.failure, "artifact.upload_failed");
        log.info("artifact sealed", {
          artifact: a.name,
          generation_id: r.generationId,
          size_bytes: a.sizeBytes,
          sha256: a.sha256,
          format: a.format,
          retried_parts: r.retriedParts,
        });
      }
      return signal.aborted ? null : "ok";
    } finally {
      this.finalizeMs += monotonicNow() - started;
      await rm(spoolDir, { recursive: true, force: true });
    }
  }

  /** Agent-owned scratch beside the workspace (inside the sandbox root, so destroy removes it). */
  private makeSpool(sandbox: Sandbox): Promise<string> {
    return mkdtemp(path.join(scratchDirOf(sandbox), ".kiln-artifact-spool-"));
  }

  private interpret(f: CallFailure, cause: ArtifactCause): Verdict | null {
    switch (f.kind) {
      case "aborted":
        return null;
      case "fenced":
        this.deps.onStop("fenced", f.code);
        return null;
      case "cancelled":
        this.deps.onStop("cancel");
        return null;
      case "error":
        if (f.code === "ARTIFACT.VERIFICATION_FAILED")
          return platformFailure("artifact.upload_verification_failed", f.message);
        if (f.code === "ARTIFACT.TOO_LARGE") return causeVerdict("artifact.too_large", f.message);
        return platformFailure(cause, f.message);
    }
  }
}

function causeVerdict(cause: ArtifactCause, message: string): Verdict {
  const user = (ARTIFACT_USER_CAUSES as readonly string[]).includes(cause);
  return user ? { outcome: "user_failure", cause, message, exitCode: null } : platformFailure(cause, message);
}
