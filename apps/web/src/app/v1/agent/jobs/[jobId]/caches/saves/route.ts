import { AGENT_ENDPOINTS } from "@kiln/domain";
import { authenticateJobToken, openCacheSave } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

/** Opens a save (trusted runs only: 403 CACHE.WRITE_REFUSED otherwise) and grants one presigned PUT. */
export const POST = route({
  path: AGENT_ENDPOINTS.openCacheSave.path,
  summary: "Open a cache save (trusted runs only) with one presigned PUT",
  auth: AGENT_ENDPOINTS.openCacheSave.auth,
  responses: { 200: { description: "the save", schema: AGENT_ENDPOINTS.openCacheSave.response } },
  body: AGENT_ENDPOINTS.openCacheSave.request,
  uuidParams: ["jobId"],
  handler: async ({ req, params, body }) => {
    const { db, caches } = services();
    const claims = await authenticateJobToken(db, req.headers.get("authorization"), params.jobId ?? "");
    const epoch = body.epoch === claims.epoch ? body.epoch : -1;
    const s = await openCacheSave(
      db,
      caches(),
      { ...claims, epoch },
      {
        inputs: body.inputs,
        sizeBytes: body.size_bytes,
        sha256: body.sha256,
        unpackedBytes: body.unpacked_bytes,
        entryCount: body.entry_count,
      },
    );
    if (s.state !== "upload") return json(200, { state: s.state, key: s.key });
    return json(200, { state: "upload", entry_id: s.entryId, key: s.key, url: s.url, url_expires_at: s.urlExpiresAt });
  },
});
