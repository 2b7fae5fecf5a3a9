import { addRetentionHold } from "@kiln/engine";
import { auditProcedure } from "../init.ts";
import { addHoldInput } from "./hold-input.ts";

/** Keeps an artifact past its expiry (issue 21); admins and auditors; another org's is NOT_FOUND. */
export const addHold = auditProcedure
  .input(addHoldInput)
  .mutation(({ ctx, input }) =>
    addRetentionHold(
      ctx.db,
      { orgId: ctx.tenant.orgId, role: ctx.tenant.role, actor: `web:${ctx.tenant.login}` },
      { artifactId: input.artifactId, reason: input.reason },
    ),
  );
