// The agent's artifact calls answered in-process by the real engine use cases, so the benchmark
// measures the byte path (agent <-> object store, read-back verification) without a Next server in
// the way. The handful of JSON calls per GiB this skips (open, 16 part records, complete, grant) are
// not where the time goes; the request/response shapes are still the shared zod contract, because
// the real ControlClient builds and validates them. Sealing (issue 21, docs/adr/0037) is answered as
// the web routes answer it: the agent's seal offer is passed on, and a store with shred keys hands
// back the data key and salt (sealWire), so the agent seals its parts and opens its restores itself.
import type { Db } from "@kiln/db";
import { AGENT_ENDPOINTS, isDomainError, matchAgentEndpoint } from "@kiln/domain";
import {
  finalizeUpload,
  grantDownload,
  openUpload,
  recordPart,
  sealWire,
  type ArtifactStore,
  type JobClaims,
} from "@kiln/engine";

export function inProcessFetch(db: Db, store: ArtifactStore, claimsFor: (jobId: string) => JobClaims): typeof fetch {
  return async (input, init) => {
    const url = new URL(typeof input === "string" ? input : input instanceof URL ? input.href : input.url);
    const body: unknown = JSON.parse(String(init?.body ?? "{}"));
    // Routed and parsed by the agent protocol's endpoint table (ADR 0038), as the web routes are.
    const m = matchAgentEndpoint(init?.method ?? "GET", url.pathname);
    try {
      if (!m) return Response.json({ error: { code: "NOT_FOUND", message: url.pathname } }, { status: 404 });
      const claims = claimsFor(m.params.job_id ?? "");
      const generationId = m.params.generation_id ?? "";
      if (m.name === "requestArtifactDownload") {
        const b = AGENT_ENDPOINTS.requestArtifactDownload.request.parse(body);
        const g = await grantDownload(db, store, claims, { fromJob: b.from_job, name: b.name });
        return Response.json({
          generation_id: g.generationId,
          producer_epoch: g.producerEpoch,
          size_bytes: g.sizeBytes,
          sha256: g.sha256,
          format: g.format,
          url: g.url,
          url_expires_at: g.urlExpiresAt,
          ...(g.seal ? { seal: sealWire(g.seal) } : {}),
        });
      }
      if (m.name === "openArtifactUpload") {
        const b = AGENT_ENDPOINTS.openArtifactUpload.request.parse(body);
        const s = await openUpload(db, store, claims, {
          name: b.name,
          sizeBytes: b.size_bytes,
          sha256: b.sha256,
          format: b.format,
          seal: b.seal === "kiln-shred-v1",
        });
        return Response.json({
          generation_id: s.generationId,
          state: s.state,
          size_bytes: s.sizeBytes,
          sha256: s.sha256,
          part_size: s.partSize,
          part_count: s.partCount,
          parts: s.parts.map((p) => ({
            part_number: p.partNumber,
            offset: p.offset,
            size: p.size,
            ...(p.sealedSize !== undefined ? { sealed_size: p.sealedSize } : {}),
            done: p.done,
            ...(p.url ? { url: p.url } : {}),
          })),
          urls_expire_at: s.urlsExpireAt,
          ...(s.seal ? { seal: sealWire(s.seal) } : {}),
        });
      }
      if (m.name === "recordArtifactPart") {
        const b = AGENT_ENDPOINTS.recordArtifactPart.request.parse(body);
        const r = await recordPart(db, claims, generationId, {
          partNumber: b.part_number,
          sizeBytes: b.size_bytes,
          sha256: b.sha256,
          etag: b.etag,
          md5: b.md5 ?? null,
          tries: b.tries,
        });
        return Response.json({ recorded: true, retry: r.retry });
      }
      if (m.name !== "completeArtifactUpload")
        return Response.json({ error: { code: "NOT_FOUND", message: url.pathname } }, { status: 404 });
      const s = await finalizeUpload(db, store, claims, generationId);
      return Response.json({
        state: "sealed",
        generation_id: s.generationId,
        size_bytes: s.sizeBytes,
        sha256: s.sha256,
      });
    } catch (e) {
      const code = isDomainError(e) ? e.code : "INTERNAL";
      return Response.json(
        { error: { code, message: e instanceof Error ? e.message : String(e) } },
        { status: isDomainError(e) ? 409 : 500 },
      );
    }
  };
}
