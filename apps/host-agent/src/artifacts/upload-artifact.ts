// Uploads one frozen artifact: open (or resume) the attempt's session, PUT the missing parts to
// their presigned URLs a few at a time, record each part (number, size, sha256, ETag), then ask the
// control plane to complete and verify. A failed part is retried on its own with the same bytes
// (the spool is read-only); expired URLs are refreshed by re-opening the same session.
import type { ArtifactUploadSession, ControlClient, JobTicket } from "../control-client.ts";
import { errorMessage, type Logger } from "@kiln/logger";
import { backoffMs, sleep } from "../timing.ts";
import { countMultipartRetry } from "../metrics/index.ts";
import { callControl, type CallFailure } from "./control-calls.ts";
import { spoolUnchanged, type FrozenArtifact } from "./freeze.ts";
import { HttpStatusError, putFileRange, putSealedRange } from "./http-transfer.ts";
import type { Transform } from "node:stream";
import { agentProtocol, sealedParts, type SealedPart } from "@kiln/domain";
import { headerFor, PartSealStream } from "@kiln/chunk-cipher";

export interface UploadOptions {
  client: ControlClient;
  ticket: JobTicket;
  log: Logger;
  signal: AbortSignal;
  /** Parts in flight at once. */
  concurrency?: number;
  /** PUT tries per part before the upload fails. */
  partTries?: number;
}

export type UploadResult =
  | { ok: true; generationId: string; retriedParts: number }
  | { ok: false; failure: CallFailure };

const CONTROL_TIMEOUT_MS = 30_000;
const MAX_SESSION_ROUNDS = 5;

export async function uploadArtifact(a: FrozenArtifact, o: UploadOptions): Promise<UploadResult> {
  const { client, ticket, log, signal } = o;
  const open = (): Promise<{ ok: true; data: ArtifactUploadSession } | { ok: false; failure: CallFailure }> =>
    callControl(
      "open artifact upload",
      (s) =>
        client.openArtifactUpload(
          ticket.jobId,
          ticket.jobToken,
          {
            epoch: ticket.epoch,
            name: a.name,
            size_bytes: a.sizeBytes,
            sha256: a.sha256,
            format: a.format,
            // Protocol 3: this agent seals parts as it PUTs them when the control plane asks it to.
            seal: agentProtocol.ARTIFACT_SEAL_SCHEME,
          },
          { timeoutMs: CONTROL_TIMEOUT_MS, signal: s },
        ),
      { signal, log },
    );
  let retriedParts = 0;
  let session = await open();
  for (let round = 0; session.ok && session.data.state === "uploading"; round++) {
    const pending = session.data.parts.filter((p) => !p.done);
    if (pending.length === 0) break;
    if (round >= MAX_SESSION_ROUNDS)
      return failed("upload.rounds_exhausted", `parts still missing after ${round} rounds`);
    const generationId = session.data.generation_id;
    const sealer = sealerFor(a, session.data);
    const outcome = await runPool(pending, o.concurrency ?? 4, async (part) => {
      const r = await uploadPart(a, part, o, sealer);
      if (r.kind !== "uploaded") return r;
      if (r.tries > 1) retriedParts++;
      const rec = await callControl(
        "record artifact part",
        (s) =>
          client.recordArtifactPart(
            ticket.jobId,
            ticket.jobToken,
            generationId,
            {
              epoch: ticket.epoch,
              part_number: part.part_number,
              size_bytes: part.sealed_size ?? part.size,
              sha256: r.sha256,
              etag: r.etag,
              md5: r.md5,
              tries: r.tries,
            },
            { timeoutMs: CONTROL_TIMEOUT_MS, signal: s },
          ),
        { signal, log },
      );
      return rec.ok ? { kind: "uploaded" as const } : { kind: "failed" as const, failure: rec.failure };
    });
    if (outcome) return { ok: false, failure: outcome };
    session = await open(); // learns which parts are recorded; fresh URLs for any that are not
  }
  if (!session.ok) return { ok: false, failure: session.failure };
  const generationId = session.data.generation_id;
  if (session.data.state === "uploading") {
    // The declared SHA-256 was taken at freeze; the parts were hashed as sent. Complete only if
    // the spool was not touched in between, so both describe the same bytes.
    if (!(await spoolUnchanged(a)))
      return failed("upload.spool_changed", `the frozen copy of ${a.name} changed after it was hashed`);
    // Read-back verification streams the object once; give it time in proportion to the size.
    const timeoutMs = 120_000 + Math.ceil(a.sizeBytes / (20 * 1024 * 1024)) * 1000;
    const done = await callControl(
      "complete artifact upload",
      (s) =>
        client.completeArtifactUpload(ticket.jobId, ticket.jobToken, generationId, ticket.epoch, {
          timeoutMs,
          signal: s,
        }),
      { signal, log },
    );
    if (!done.ok) return { ok: false, failure: done.failure };
  }
  return { ok: true, generationId, retriedParts };

  function failed(code: string, message: string): UploadResult {
    return { ok: false, failure: { kind: "error", code, status: null, message } };
  }
}

type PartOutcome =
  | { kind: "uploaded"; etag: string; sha256: string; md5: string; tries: number }
  | { kind: "refresh" }
  | { kind: "failed"; failure: CallFailure };

/**
 * How a sealed session's parts are made (docs/adr/0037 "Artifacts"): the header the control plane
 * fixed (key id, chunk size, salt) and each part's chunk range. The key stays in this closure: it is
 * never written to disk, logged or passed to anything the sandbox can reach.
 */
type Sealer = ((partNumber: number) => { layout: SealedPart; stream: () => Transform }) | null;

function sealerFor(a: FrozenArtifact, s: ArtifactUploadSession): Sealer {
  const seal = s.seal;
  if (!seal) return null;
  const key = Buffer.from(seal.key, "base64");
  const header = headerFor(seal.key_id, seal.chunk_size, Buffer.from(seal.salt, "base64"));
  const layouts = sealedParts(a.sizeBytes, { partSize: s.part_size, partCount: s.part_count }, seal.chunk_size);
  if (layouts.reduce((n, p) => n + p.sealedSize, 0) !== seal.stored_size_bytes)
    throw new Error(`the sealed layout of ${a.name} disagrees with the control plane's stored size`);
  return (partNumber) => {
    const layout = layouts[partNumber - 1];
    if (!layout) throw new Error(`part ${partNumber} is not in the plan`);
    return { layout, stream: () => new PartSealStream(key, header, layout) };
  };
}

async function uploadPart(
  a: FrozenArtifact,
  part: ArtifactUploadSession["parts"][number],
  o: UploadOptions,
  sealer: Sealer,
): Promise<PartOutcome> {
  const tries = o.partTries ?? 5;
  if (!part.url) return { kind: "refresh" };
  for (let i = 1; ; i++) {
    if (o.signal.aborted) return { kind: "failed", failure: { kind: "aborted" } };
    try {
      const sealed = sealer?.(part.part_number);
      const r = sealed
        ? await putSealedRange(part.url, a.file, sealed.layout, sealed.stream(), o.signal)
        : await putFileRange(part.url, a.file, part.offset, part.size, o.signal);
      return { kind: "uploaded", ...r, tries: i };
    } catch (err) {
      if (o.signal.aborted) return { kind: "failed", failure: { kind: "aborted" } };
      // 403: the URL expired (or the clock moved); a re-opened session signs a fresh one.
      if (err instanceof HttpStatusError && err.status === 403) return { kind: "refresh" };
      if (i >= tries)
        return {
          kind: "failed",
          failure: {
            kind: "error",
            code: "upload.part_failed",
            status: null,
            message: `part ${part.part_number}: ${errorMessage(err)}`,
          },
        };
      const delay = backoffMs(i - 1, 500, 10_000);
      countMultipartRetry();
      o.log.warn("artifact part upload failed; retrying the same bytes", {
        artifact: a.name,
        part: part.part_number,
        try: i,
        error: errorMessage(err),
        retry_in_ms: delay,
      });
      await sleep(delay, o.signal);
    }
  }
}

/** Runs `work` over `items` with at most `limit` in flight; stops at the first hard failure. */
async function runPool<T>(
  items: T[],
  limit: number,
  work: (item: T) => Promise<{ kind: "uploaded" } | { kind: "refresh" } | { kind: "failed"; failure: CallFailure }>,
): Promise<CallFailure | null> {
  let next = 0;
  let failure: CallFailure | null = null;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (failure === null && next < items.length) {
      const item = items[next++] as T;
      const r = await work(item);
      if (r.kind === "failed") failure ??= r.failure;
    }
  });
  await Promise.all(lanes);
  return failure;
}
