import { addRetentionHold, authenticateApiToken, removeRetentionHold } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";
import { holdBody, retentionHold } from "@/server/http/schemas/retention.ts";

export const dynamic = "force-dynamic";

/** A retention hold: the artifact is kept past its expiry until the hold is removed. Audited. */
export const POST = route({
  path: "/v1/artifacts/{artifact_id}/hold",
  summary: "Place a retention hold on an artifact, with a reason; admins and auditors",
  description:
    "Another org's artifact is 404 ARTIFACT.NOT_FOUND; one already held is 409 RETENTION.HOLD_EXISTS; an evicted one is 410 ARTIFACT.EXPIRED.",
  auth: "api_token",
  uuidParams: ["artifactId"],
  body: holdBody,
  responses: { 201: { description: "the hold", schema: retentionHold } },
  handler: async ({ req, params, body }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    const actor = { orgId: caller.orgId, role: caller.role, actor: caller.name };
    return json(201, await addRetentionHold(db, actor, { artifactId: params.artifactId ?? "", reason: body.reason }));
  },
});

export const DELETE = route({
  path: "/v1/artifacts/{artifact_id}/hold",
  summary: "Remove an artifact's retention hold; admins and auditors",
  description: "No active hold (or another org's artifact) is 404 RETENTION.HOLD_NOT_FOUND.",
  auth: "api_token",
  uuidParams: ["artifactId"],
  responses: { 200: { description: "the hold as removed", schema: retentionHold } },
  handler: async ({ req, params }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    const actor = { orgId: caller.orgId, role: caller.role, actor: caller.name };
    return json(200, await removeRetentionHold(db, actor, { artifactId: params.artifactId ?? "" }));
  },
});
