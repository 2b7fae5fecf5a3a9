import { listQuarantines as listQuarantinesUseCase } from "@kiln/engine";
import { readProcedure } from "../init.ts";

/** The org home's alert: artifacts whose stored bytes no longer match their attestation. */
export const listQuarantines = readProcedure.query(({ ctx }) => listQuarantinesUseCase(ctx.db, ctx.tenant.orgId));
