import { authenticateApiToken, callerOrg, createOrgPool, listOrgPools } from "@kiln/engine";
import { ISOLATION_CLASSES } from "@kiln/domain";
import { z } from "zod";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";
import { orgPool, orgPoolJson } from "@/server/http/schemas/runners.ts";

export const dynamic = "force-dynamic";

/** The org's own pools (named <org>/<name>) for its self-hosted runners; admins. */
export const GET = route({
  path: "/v1/orgs/{org}/pools",
  summary: "The org's own pools (<org>/<name>) for its self-hosted runners; admins",
  auth: "api_token",
  responses: { 200: { description: "the org's pools", schema: z.object({ pools: z.array(orgPool) }) } },
  handler: async ({ req, params }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    const org = await callerOrg(db, caller, params.org ?? "", ["admin"], "managing pools");
    return json(200, { pools: (await listOrgPools(db, { orgId: org.orgId })).map(orgPoolJson) });
  },
});

const body = z.object({ name: z.string().min(1).max(63), isolation: z.enum(ISOLATION_CLASSES) }).strict();

/** Creates an org pool <org>/<name> with its minimum isolation class (admins; audited). */
export const POST = route({
  path: "/v1/orgs/{org}/pools",
  summary: "Create an org pool <org>/<name> ({name, isolation}) for the org's own hosts; admins",
  auth: "api_token",
  body,
  responses: { 201: { description: "the pool", schema: orgPool } },
  handler: async ({ req, params, body: b }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    const org = await callerOrg(db, caller, params.org ?? "", ["admin"], "managing pools");
    const p = await createOrgPool(db, {
      orgId: org.orgId,
      name: b.name,
      isolation: b.isolation,
      actor: `token:${caller.tokenId}`,
    });
    return json(201, orgPoolJson(p));
  },
});
