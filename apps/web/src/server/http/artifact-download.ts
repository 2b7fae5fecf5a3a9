// One answer for both artifact download routes (by id, and by job and name): a plaintext artifact is
// a 302 to its presigned URL; a sealed one (ADR 0037) is opened by this process and streamed, with
// the plaintext digest its provenance names, so a client can check the body without the transport.
import { Readable } from "node:stream";
import type { ArtifactDownload } from "@kiln/engine";

/** The 200 of a sealed artifact, as both routes declare it in the OpenAPI document. */
export const sealedArtifactBody = {
  description: "the artifact's bytes (sealed artifacts)",
  contentType: "application/octet-stream",
  headers: { "x-kiln-sha256": "the plaintext SHA-256 its provenance names" },
};

export function artifactDownloadResponse(d: ArtifactDownload): Response {
  if (d.kind === "redirect")
    return new Response(null, { status: 302, headers: { location: d.url, "cache-control": "no-store" } });
  return new Response(Readable.toWeb(d.body) as ReadableStream<Uint8Array>, {
    status: 200,
    headers: {
      "content-type": "application/octet-stream",
      "content-length": String(d.sizeBytes),
      "content-disposition": `attachment; filename="${d.name}"`,
      "x-kiln-sha256": d.sha256,
      "cache-control": "no-store",
    },
  });
}
