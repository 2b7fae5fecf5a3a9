import { z } from "zod";
import { authenticateApiToken, callerOrg, usageCsv, usagePeriod, usageReport } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";
import { usageReportSchema } from "@/server/http/schemas/usage.ts";

export const dynamic = "force-dynamic";

/** Showback (issue 33, docs/adr/0045): the org's job-minutes and stored bytes, as JSON or CSV. */
export const GET = route({
  path: "/v1/orgs/{org}/usage",
  summary:
    "The org's job-minutes by repo, pool and size, per day, and its artifact and cache bytes by retention class (?from=&to=, ?format=csv)",
  description:
    "`from` and `to` are ISO dates or times (UTC); the period is [from, to), by when attempts ended, at most 367 days; defaults: this UTC month. `format=csv` answers text/csv with the same rows (their seconds sum to the JSON totals).",
  auth: "api_token",
  query: z.object({
    from: z.string().max(40).optional(),
    to: z.string().max(40).optional(),
    format: z.enum(["json", "csv"]).optional(),
  }),
  responses: {
    200: { description: "the usage report", schema: usageReportSchema, contentType: "text/csv" },
  },
  handler: async ({ req, params, query }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    const org = await callerOrg(db, caller, params.org ?? "", ["member", "admin", "auditor"], "reading usage");
    const report = await usageReport(db, { orgId: org.orgId, ...usagePeriod(query.from, query.to, new Date()) });
    if (query.format === "csv")
      return new Response(usageCsv(report), {
        status: 200,
        headers: {
          "content-type": "text/csv; charset=utf-8",
          "content-disposition": `attachment; filename="kiln-usage-${org.slug}.csv"`,
        },
      });
    return json(200, report);
  },
});
