import { listShredLeaks as listShredLeaksUseCase } from "@kiln/engine";
import { readProcedure } from "../init.ts";

/** The org home's alert (issue 21): deleted objects the sampler could still read, by path. */
export const listShredLeaks = readProcedure.query(({ ctx }) => listShredLeaksUseCase(ctx.db, ctx.tenant.orgId));
