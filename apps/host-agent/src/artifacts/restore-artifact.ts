// Restores one artifact before the first step: resolve the producer's binding, download into the
// agent-owned spool, verify size and SHA-256, and only then place it in the workspace. The step never
// sees unverified bytes; a mismatch is a named platform failure (artifact.digest_mismatch).
import { lstat, mkdir, realpath, rm } from "node:fs/promises";
import { moveInto } from "../shared/move-into.ts";
import path from "node:path";
import { declaredPathCause, DomainError, isDomainError, pathIsWithin, type ArtifactCause } from "@kiln/domain";
import { OpenStream } from "@kiln/chunk-cipher";
import * as tar from "tar";
import type { ControlClient, JobTicket } from "../control-client.ts";
import { errorMessage, type Logger } from "@kiln/logger";
import { backoffMs, sleep } from "../timing.ts";
import { callControl, type CallFailure } from "./control-calls.ts";
import { downloadToFile, HttpStatusError, TooLargeError } from "./http-transfer.ts";

export interface RestoreOptions {
  client: ControlClient;
  ticket: JobTicket;
  log: Logger;
  signal: AbortSignal;
  workspaceDir: string;
  spoolDir: string;
}

export type RestoreResult =
  | { ok: true; generationId: string; producerEpoch: number; sizeBytes: number }
  | { ok: false; failure: CallFailure }
  | { ok: false; cause: ArtifactCause; message: string };

const DOWNLOAD_TRIES = 3;

export async function restoreArtifact(
  entry: { fromJob: string; name: string; path: string },
  o: RestoreOptions,
): Promise<RestoreResult> {
  const what = `artifact ${JSON.stringify(entry.name)} from ${JSON.stringify(entry.fromJob)}`;
  const target = await resolveRestoreTarget(o.workspaceDir, entry.path);
  if (!target.ok)
    return { ok: false, cause: target.cause, message: `${what} -> ${JSON.stringify(entry.path)}: ${target.message}` };
  const grant = await callControl(
    "request artifact download",
    (s) =>
      o.client.requestArtifactDownload(
        o.ticket.jobId,
        o.ticket.jobToken,
        {
          epoch: o.ticket.epoch,
          from_job: entry.fromJob,
          name: entry.name,
        },
        { timeoutMs: 30_000, signal: s },
      ),
    { signal: o.signal, log: o.log },
  );
  if (!grant.ok) {
    if (grant.failure.kind === "error" && grant.failure.code === "ARTIFACT.NOT_FOUND") {
      return {
        ok: false,
        cause: "artifact.binding_missing",
        message: `${what}: the producer has no bound artifact in this run`,
      };
    }
    if (grant.failure.kind === "error" && grant.failure.code === "ARTIFACT.QUARANTINED") {
      // Storage no longer holds what was sealed: the platform's fault, named as such (never the user's).
      return { ok: false, cause: "artifact.quarantined", message: `${what}: ${grant.failure.message}` };
    }
    return { ok: false, failure: grant.failure };
  }
  const g = grant.data;
  const spoolFile = path.join(o.spoolDir, `restore-${entry.name}-${g.generation_id}`);
  let got: { sizeBytes: number; sha256: string } | null = null;
  for (let i = 1; got === null; i++) {
    try {
      // A sealed object is opened on the way to the spool (ADR 0037): every chunk authenticated, and
      // the size and SHA-256 checked below are the plaintext's, as the binding names them.
      got = g.seal
        ? await downloadToFile(g.url, spoolFile, o.signal, g.seal.stored_size_bytes, openerFor(g.seal))
        : await downloadToFile(g.url, spoolFile, o.signal, g.size_bytes);
    } catch (err) {
      await rm(spoolFile, { force: true });
      if (o.signal.aborted) return { ok: false, failure: { kind: "aborted" } };
      if (err instanceof TooLargeError)
        return {
          ok: false,
          cause: "artifact.digest_mismatch",
          message: `${what}: the stored object is larger than its binding (${g.size_bytes} bytes)`,
        };
      if (isDomainError(err) && err.code.startsWith("SHRED."))
        return {
          ok: false,
          cause: "artifact.digest_mismatch",
          message: `${what}: the stored object does not open under its key (${err.message})`,
        };
      const permanent = err instanceof HttpStatusError && err.status >= 400 && err.status < 500;
      if (permanent || i >= DOWNLOAD_TRIES)
        return { ok: false, cause: "artifact.download_failed", message: `${what}: ${errorMessage(err)}` };
      await sleep(backoffMs(i - 1, 500, 5_000), o.signal);
    }
  }
  if (got.sizeBytes !== g.size_bytes || got.sha256 !== g.sha256) {
    await rm(spoolFile, { force: true });
    return {
      ok: false,
      cause: "artifact.digest_mismatch",
      message: `${what}: downloaded ${got.sizeBytes} bytes with sha256 ${got.sha256}; the binding says ${g.size_bytes} bytes with sha256 ${g.sha256}`,
    };
  }
  try {
    await place(spoolFile, g.format, target.path);
  } catch (err) {
    return {
      ok: false,
      cause: "artifact.path_outside_workspace",
      message: `${what}: could not place it at ${JSON.stringify(entry.path)}: ${errorMessage(err)}`,
    };
  }
  o.log.info("artifact restored", {
    artifact: entry.name,
    from_job: entry.fromJob,
    producer_epoch: g.producer_epoch,
    size_bytes: g.size_bytes,
    sha256: g.sha256,
  });
  return { ok: true, generationId: g.generation_id, producerEpoch: g.producer_epoch, sizeBytes: got.sizeBytes };
}

function openerFor(seal: { key_id: string; key: string }): OpenStream {
  const key = Buffer.from(seal.key, "base64");
  return new OpenStream((id) => {
    if (id !== seal.key_id) throw new DomainError("SHRED.DECRYPT_FAILED", `sealed under key ${id}, not ${seal.key_id}`);
    return { id, key };
  });
}

async function place(spoolFile: string, format: "file" | "tar", target: string): Promise<void> {
  await mkdir(path.dirname(target), { recursive: true });
  if (format === "file") {
    // A rename replaces a symlink at the target itself, never the file it points to (the copy
    // fallback, across mounts, refuses an existing target instead).
    await rm(target, { force: true }).catch(() => undefined);
    await moveInto(spoolFile, target);
    return;
  }
  await mkdir(target, { recursive: true });
  // node-tar refuses absolute paths and `..` and will not write through symlinks it meets.
  await tar.extract({ file: spoolFile, cwd: target, strict: true, preservePaths: false, noChmod: false });
  await rm(spoolFile, { force: true });
}

/**
 * Where the artifact goes: the declared path must stay inside the workspace lexically, and the
 * deepest part of it that already exists (the checkout may have put directories or links there)
 * must really be inside the workspace too.
 */
export async function resolveRestoreTarget(
  workspaceDir: string,
  relative: string,
): Promise<{ ok: true; path: string } | { ok: false; cause: ArtifactCause; message: string }> {
  if (declaredPathCause(relative))
    return { ok: false, cause: "artifact.path_outside_workspace", message: "the path must stay inside the workspace" };
  const workspaceReal = await realpath(workspaceDir);
  const target = path.join(workspaceReal, relative);
  let existing = target;
  for (;;) {
    const s = await lstat(existing).catch(() => null);
    if (s) break;
    existing = path.dirname(existing);
  }
  const real = await realpath(existing).catch(() => null);
  if (real === null || !pathIsWithin(workspaceReal, real)) {
    return {
      ok: false,
      cause: "artifact.symlink_escape",
      message: "a symbolic link in the path leads outside the workspace",
    };
  }
  return { ok: true, path: existing === target ? target : path.join(real, path.relative(existing, target)) };
}
