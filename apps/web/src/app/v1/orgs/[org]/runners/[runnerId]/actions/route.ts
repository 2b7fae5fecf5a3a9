import { applyRunnerAction, authenticateApiToken, callerOrg } from "@kiln/engine";
import { z } from "zod";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";
import { runner, runnerJson } from "@/server/http/schemas/runners.ts";

export const dynamic = "force-dynamic";

const body = z
  .object({
    action: z.enum(["drain", "undrain", "quarantine", "unquarantine"]),
    /** Required for quarantine: shown in the fleet view. */
    reason: z.string().max(500).optional(),
  })
  .strict();

/** Drain (finish current jobs, claim nothing new), quarantine (claims refused) and their undo; audited. */
export const POST = route({
  path: "/v1/orgs/{org}/runners/{runner_id}/actions",
  summary: "Drain, undrain, quarantine ({reason}) or unquarantine a runner; admins",
  auth: "api_token",
  uuidParams: ["runnerId"],
  body,
  responses: { 200: { description: "the runner", schema: runner } },
  handler: async ({ req, params, body: b }) => {
    const { db, cfg } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    const org = await callerOrg(db, caller, params.org ?? "", ["admin"], "managing runners");
    const r = await applyRunnerAction(db, {
      orgId: org.orgId,
      runnerId: params.runnerId ?? "",
      action: b.action,
      ...(b.reason !== undefined ? { reason: b.reason } : {}),
      actor: `token:${caller.tokenId}`,
      leaseTtlMs: cfg.leaseTtlMs,
    });
    return json(200, runnerJson(r));
  },
});
