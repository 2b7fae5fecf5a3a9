import { AGENT_ENDPOINTS, DomainError } from "@kiln/domain";
import { authenticateJobToken, finalizeCacheSave } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";
// Read-back verification streams the whole archive once (as for artifacts, ADR 0007).
export const maxDuration = 3600;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Verifies the uploaded archive and binds its key first-writer-wins (idempotent). */
export const POST = route({
  path: AGENT_ENDPOINTS.completeCacheSave.path,
  summary: "Verify the uploaded archive and bind its key (first writer wins)",
  auth: AGENT_ENDPOINTS.completeCacheSave.auth,
  responses: { 200: { description: "bound", schema: AGENT_ENDPOINTS.completeCacheSave.response } },
  body: AGENT_ENDPOINTS.completeCacheSave.request,
  uuidParams: ["jobId"],
  handler: async ({ req, params, body }) => {
    const { db, caches } = services();
    const claims = await authenticateJobToken(db, req.headers.get("authorization"), params.jobId ?? "");
    const entryId = params.entryId ?? "";
    if (!UUID.test(entryId)) throw new DomainError("CACHE.UPLOAD_NOT_FOUND", "no such cache save");
    const epoch = body.epoch === claims.epoch ? body.epoch : -1;
    const r = await finalizeCacheSave(db, caches(), { ...claims, epoch }, entryId);
    return json(200, { state: r.state, entry_id: r.entryId, key: r.key });
  },
});
