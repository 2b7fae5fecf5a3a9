import { DomainError } from "@kiln/domain";
import { authenticateApiToken, setPoolInterruptible } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";
import { interruptibleAnswer, interruptibleBody } from "@/server/http/schemas/fleet.ts";

export const dynamic = "force-dynamic";

/** Flags a pool the caller's org owns interruptible (issue 22, ADR 0035); admins, audited. */
export const PUT = route({
  path: "/v1/pools/{pool}/interruptible",
  summary:
    "Flag an org-owned pool interruptible ({interruptible, serves}): its hosts take background work of `serves` only; admins, audited",
  auth: "api_token",
  body: interruptibleBody,
  responses: { 200: { description: "the pool's flag", schema: interruptibleAnswer } },
  handler: async ({ req, params, body }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    if (caller.role !== "admin") throw new DomainError("AUTH.FORBIDDEN", "changing a pool needs the admin role");
    const r = await setPoolInterruptible(db, {
      pool: params.pool ?? "",
      interruptible: body.interruptible,
      serves: body.serves ?? null,
      actor: caller.name,
      orgId: caller.orgId,
    });
    return json(200, r);
  },
});
