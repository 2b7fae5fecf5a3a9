import { removeRetentionHold } from "@kiln/engine";
import { auditProcedure } from "../init.ts";
import { holdRef } from "./hold-input.ts";

/** Lifts an artifact's retention hold (issue 21); admins and auditors; audited. */
export const removeHold = auditProcedure
  .input(holdRef)
  .mutation(({ ctx, input }) =>
    removeRetentionHold(
      ctx.db,
      { orgId: ctx.tenant.orgId, role: ctx.tenant.role, actor: `web:${ctx.tenant.login}` },
      { artifactId: input.artifactId },
    ),
  );
