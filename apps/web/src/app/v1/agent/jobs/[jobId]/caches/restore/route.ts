import { AGENT_ENDPOINTS } from "@kiln/domain";
import { authenticateJobToken, grantCacheRestore } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

/** Looks the job's cache key up (read wide) and grants a short-lived GET for the bound blob. */
export const POST = route({
  path: AGENT_ENDPOINTS.requestCacheRestore.path,
  summary: "Look the job's cache key up and grant a short-lived GET",
  auth: AGENT_ENDPOINTS.requestCacheRestore.auth,
  responses: { 200: { description: "hit or miss", schema: AGENT_ENDPOINTS.requestCacheRestore.response } },
  body: AGENT_ENDPOINTS.requestCacheRestore.request,
  uuidParams: ["jobId"],
  handler: async ({ req, params, body }) => {
    const { db, caches } = services();
    const claims = await authenticateJobToken(db, req.headers.get("authorization"), params.jobId ?? "");
    const epoch = body.epoch === claims.epoch ? body.epoch : -1;
    const g = await grantCacheRestore(db, caches(), { ...claims, epoch }, body.inputs);
    if (!g.hit) return json(200, { hit: false, key: g.key });
    return json(200, {
      hit: true,
      key: g.key,
      entry_id: g.entryId,
      exact: g.exact,
      size_bytes: g.sizeBytes,
      sha256: g.sha256,
      unpacked_bytes: g.unpackedBytes,
      entry_count: g.entryCount,
      url: g.url,
      url_expires_at: g.urlExpiresAt,
    });
  },
});
