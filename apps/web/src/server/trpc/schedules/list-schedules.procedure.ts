import { listSchedules as listSchedulesUseCase } from "@kiln/engine";
import { z } from "zod";
import { readProcedure } from "../init.ts";

/** The org's schedules (optionally one repo's) with their next runs; every member role may read them. */
export const listSchedules = readProcedure
  .input(z.object({ repoId: z.uuid().nullish() }))
  .query(({ ctx, input }) => listSchedulesUseCase(ctx.db, { orgId: ctx.tenant.orgId, repoId: input.repoId ?? null }));
