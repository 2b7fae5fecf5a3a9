import { z } from "zod";

// Showback's wire shape (GET /v1/orgs/{org}/usage and the dashboard's usage page, docs/adr/0045).

export const usageReportSchema = z.object({
  from: z.string(),
  to: z.string(),
  quota: z.object({
    quotaMinutes: z.number().int().nullable(),
    usedSeconds: z.number(),
    month: z.string(),
    percent: z.number().int().nullable(),
    level: z.enum(["unlimited", "ok", "warning", "exhausted"]),
  }),
  totals: z.object({
    attempts: z.number().int(),
    seconds: z.number(),
    billableSeconds: z.number(),
    quotaSeconds: z.number(),
  }),
  minutes: z.array(
    z.object({
      repo: z.string(),
      pool: z.string(),
      size: z.string(),
      selfHosted: z.boolean(),
      attempts: z.number().int(),
      seconds: z.number(),
      billableSeconds: z.number(),
    }),
  ),
  daily: z.array(z.object({ day: z.string(), seconds: z.number(), billableSeconds: z.number() })),
  storage: z.array(
    z.object({
      repo: z.string(),
      kind: z.enum(["artifact", "cache"]),
      retentionClass: z.string(),
      objects: z.number().int(),
      bytes: z.number(),
    }),
  ),
});
