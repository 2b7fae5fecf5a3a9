// The runs filter schema for the browser: the same zod schema the procedure validates with, from the
// pure domain package (the engine would pull Prisma into the client bundle).
import { runFilters, type RunFilters } from "@kiln/domain";

export type { RunFilters };

/** URL values to filters, dropping (not failing on) any field that is not valid. */
function parseFilters(get: (key: string) => string | null): RunFilters {
  const out: Record<string, string> = {};
  for (const [key, schema] of Object.entries(runFilters.shape)) {
    const v = get(key);
    if (v !== null && schema.safeParse(v).success) out[key] = v;
  }
  return runFilters.parse(out);
}

/** Filters live in the URL (shareable, back-button friendly); used by the page and the client view. */
export function filtersFrom(sp: URLSearchParams | Record<string, string | string[] | undefined>): RunFilters {
  return parseFilters((k) =>
    sp instanceof URLSearchParams ? sp.get(k) : (([] as (string | undefined)[]).concat(sp[k])[0] ?? null),
  );
}
