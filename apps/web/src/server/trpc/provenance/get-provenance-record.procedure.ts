import { engineTlog, getProvenanceRecord as getRecord } from "@kiln/engine";
import { z } from "zod";
import { readProcedure } from "../init.ts";

/** One provenance record, its signature and log inclusion verified on the server at read time. */
export const getProvenanceRecord = readProcedure
  .input(z.object({ attestationId: z.uuid() }))
  .query(({ ctx, input }) =>
    getRecord(ctx.db, engineTlog, { orgId: ctx.tenant.orgId, attestationId: input.attestationId }),
  );
