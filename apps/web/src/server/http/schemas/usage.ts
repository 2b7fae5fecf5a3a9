import { z } from "zod";
import { DomainError } from "@kiln/domain";

// Showback's wire shape (GET /v1/orgs/{org}/usage and the dashboard's usage page, docs/adr/0045).

const DATE = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})?)?$/;

function when(v: string, name: string): Date {
  // A bare date is UTC midnight; anything else that Date would guess at is refused.
  const d = DATE.test(v) ? new Date(v.length === 10 ? `${v}T00:00:00Z` : v) : new Date(Number.NaN);
  if (Number.isNaN(d.getTime())) throw new DomainError("REQUEST.INVALID", `${name} must be an ISO date or time`);
  return d;
}

/** The report's period from the query: defaults to the current UTC month up to now. */
export function usagePeriod(from: string | undefined, to: string | undefined, now: Date): { from: Date; to: Date } {
  const monthStart = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  return { from: from ? when(from, "from") : monthStart, to: to ? when(to, "to") : now };
}

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
