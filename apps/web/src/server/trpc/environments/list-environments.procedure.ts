import { listEnvironments as listOfRepo, listOrgEnvironments } from "@kiln/engine";
import { z } from "zod";
import { readProcedure } from "../init.ts";
import { uuid } from "./env-procedure-support.ts";

/** The org's environments (or one repo's), in promotion order, with their pointers. */
export const listEnvironments = readProcedure
  .input(z.object({ repoId: uuid.optional() }))
  .query(({ ctx, input }) =>
    input.repoId ? listOfRepo(ctx.db, ctx.tenant.orgId, input.repoId) : listOrgEnvironments(ctx.db, ctx.tenant.orgId),
  );
