import { DomainError } from "@kiln/domain";
import { authenticateApiToken, callerOrg, listAuditEvents } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

/**
 * The org's audit trail in commit order (admins and auditors): `kind` is an exact kind or a prefix
 * ending in a dot (`secret.`), `since` an ISO time, `after` the last `seq` seen (next page).
 */
export const GET = route({
  handler: async ({ req, params }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    const org = await callerOrg(db, caller, params.org ?? "", ["admin", "auditor"], "reading the audit trail");
    const q = new URL(req.url).searchParams;
    const since = q.get("since");
    const limit = q.get("limit");
    if (limit !== null && !/^\d{1,3}$/.test(limit)) throw new DomainError("REQUEST.INVALID", "limit must be 1..500");
    const events = await listAuditEvents(db, {
      orgSlug: org.slug,
      ...(q.get("kind") ? { kind: q.get("kind") ?? "" } : {}),
      ...(since ? { since: new Date(since) } : {}),
      ...(q.get("after") ? { afterSeq: q.get("after") ?? "" } : {}),
      ...(limit ? { limit: Number(limit) } : {}),
    });
    return json(200, { events, next_after: events.at(-1)?.seq ?? null });
  },
});
