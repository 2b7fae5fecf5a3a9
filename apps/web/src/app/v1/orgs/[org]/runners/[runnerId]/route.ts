import { applyRunnerAction, authenticateApiToken, callerOrg } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";
import { runner, runnerJson } from "@/server/http/schemas/runners.ts";

export const dynamic = "force-dynamic";

/**
 * Revokes a host: its credential is dead at once, its session ends within one lease, and its
 * running attempts are fenced and retried elsewhere (admins; audited). Another org's runner is 404.
 */
export const DELETE = route({
  path: "/v1/orgs/{org}/runners/{runner_id}",
  summary: "Revoke a runner: its credential and sessions end, its running jobs are fenced and retried; admins",
  auth: "api_token",
  uuidParams: ["runnerId"],
  responses: { 200: { description: "the revoked runner", schema: runner } },
  handler: async ({ req, params }) => {
    const { db, cfg } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    const org = await callerOrg(db, caller, params.org ?? "", ["admin"], "managing runners");
    const r = await applyRunnerAction(db, {
      orgId: org.orgId,
      runnerId: params.runnerId ?? "",
      action: "revoke",
      actor: `token:${caller.tokenId}`,
      leaseTtlMs: cfg.leaseTtlMs,
    });
    return json(200, runnerJson(r));
  },
});
