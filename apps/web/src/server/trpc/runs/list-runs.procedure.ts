import { z } from "zod";
import { listRuns as listRunsView, runFilters } from "../engine-views.ts";
import { readProcedure } from "../init.ts";

const listRunsInput = z.object({
  filters: runFilters.default({}),
  /** Opaque keyset cursor from the previous page's next_cursor. */
  cursor: z.string().max(200).nullish(),
  limit: z.number().int().min(1).max(100).default(25),
});

/** Runs newest first, filtered, keyset-paginated (stays fast at 100k+ runs). */
export const listRuns = readProcedure
  .input(listRunsInput)
  .query(({ ctx, input }) =>
    listRunsView(ctx.db, ctx.tenant, { filters: input.filters, cursor: input.cursor ?? null, limit: input.limit }),
  );
