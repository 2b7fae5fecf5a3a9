import { listRecentAuditEvents } from "@kiln/engine";
import { z } from "zod";
import { auditProcedure } from "../init.ts";

/** The org's newest audit events first, filtered by kind (exact or a prefix ending in ".") and time. */
export const listAuditEvents = auditProcedure
  .input(
    z.object({
      kind: z
        .string()
        .trim()
        .max(100)
        .regex(/^[a-z0-9_.]*$/, "a kind like secret.read or a prefix like secret.")
        .optional(),
      since: z.string().datetime({ offset: true, message: "not a time" }).optional(),
    }),
  )
  .query(({ ctx, input }) =>
    listRecentAuditEvents(ctx.db, {
      orgId: ctx.tenant.orgId,
      ...(input.kind ? { kind: input.kind } : {}),
      ...(input.since ? { since: new Date(input.since) } : {}),
      limit: 200,
    }),
  );
