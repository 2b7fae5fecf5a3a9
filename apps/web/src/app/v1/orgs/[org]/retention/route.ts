import { authenticateApiToken, callerOrg, getOrgRetention, setOrgRetentionWindow } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";
import { orgRetention, windowBody } from "@/server/http/schemas/retention.ts";

export const dynamic = "force-dynamic";

/** The org's retention windows: the platform's, the org's shortened ones, and what applies. */
export const GET = route({
  path: "/v1/orgs/{org}/retention",
  summary: "The org's retention windows: platform, org overrides, effective; admins and auditors",
  auth: "api_token",
  responses: { 200: { description: "the windows in days", schema: orgRetention } },
  handler: async ({ req, params }) => {
    const { db, retention } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    const org = await callerOrg(db, caller, params.org ?? "", ["admin", "auditor"], "reading retention");
    return json(200, await getOrgRetention(db, { orgId: org.orgId, role: caller.role, actor: caller.name }, retention));
  },
});

/** Shortens (or clears) one window for the org; longer than the platform's is 422, audited. */
export const PUT = route({
  path: "/v1/orgs/{org}/retention",
  summary: "Shorten or clear one retention window for the org (never lengthen: 422); admins",
  description:
    "Applies to data sealed from now on. `days` above the platform's window answers 422 RETENTION.WINDOW_LENGTHENED.",
  auth: "api_token",
  body: windowBody,
  responses: { 200: { description: "the windows after the change", schema: orgRetention } },
  handler: async ({ req, params, body }) => {
    const { db, retention } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    const org = await callerOrg(db, caller, params.org ?? "", ["admin"], "changing retention windows");
    return json(
      200,
      await setOrgRetentionWindow(db, { orgId: org.orgId, role: caller.role, actor: caller.name }, retention, {
        kind: body.kind,
        cls: body.class,
        days: body.days,
      }),
    );
  },
});
