// Status guards take their source states from the domain's transition tables (legalSources). Most
// pass the array as a parameter (`status = ANY($n::text[])`); a prepared statement whose text is
// fixed at module load (the claim's, ADR 0015) embeds it as a literal built here once.
const STATUS = /^[a-z_]+$/;

/** `'{ready}'::text[]` for a set of statuses; refuses anything that is not a plain status name. */
export function statusArrayLiteral(statuses: readonly string[]): string {
  if (statuses.length === 0) throw new Error("a status guard needs at least one source status");
  for (const s of statuses) if (!STATUS.test(s)) throw new Error(`not a status name: ${JSON.stringify(s)}`);
  return `'{${statuses.join(",")}}'::text[]`;
}
