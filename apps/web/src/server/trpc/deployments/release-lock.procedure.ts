import { releaseDeploymentLock } from "@kiln/engine";
import { z } from "zod";
import { services } from "../../context.ts";
import { adminProcedure } from "../init.ts";
import { envInput, sessionCaller } from "./deploy-input.ts";

/** An admin's release of a lock no proof of death exists for (an org-owned host); audited. */
export const releaseLock = adminProcedure
  .input(envInput.extend({ reason: z.string().trim().min(1, "say why").max(2000) }))
  .mutation(({ ctx, input }) =>
    releaseDeploymentLock(ctx.db, services().cfg, sessionCaller(ctx.tenant), input.environmentId, input.reason),
  );
