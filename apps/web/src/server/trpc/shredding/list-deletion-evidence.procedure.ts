import { listDestructionEvidence } from "@kiln/engine";
import { auditProcedure } from "../init.ts";

/** Deletion evidence (issue 21): the org's destroyed data keys, newest first; admins and auditors. */
export const listDeletionEvidence = auditProcedure.query(({ ctx }) =>
  listDestructionEvidence(ctx.db, ctx.tenant.orgId, 200),
);
