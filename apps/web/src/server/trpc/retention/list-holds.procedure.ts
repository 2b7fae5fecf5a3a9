import { listRetentionHolds } from "@kiln/engine";
import { z } from "zod";
import { auditProcedure } from "../init.ts";

/** The org's retention holds, active first (issue 21); admins and auditors. */
export const listHolds = auditProcedure
  .input(z.object({ includeRemoved: z.boolean().default(false) }))
  .query(({ ctx, input }) =>
    listRetentionHolds(
      ctx.db,
      { orgId: ctx.tenant.orgId, role: ctx.tenant.role, actor: `web:${ctx.tenant.login}` },
      { includeRemoved: input.includeRemoved },
    ),
  );
