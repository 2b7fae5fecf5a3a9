import type { Db } from "@kiln/db";

/**
 * Deletes what workload identity no longer needs (ADR 0024): `id_token` rows an hour past their
 * expiry (verification ignores expired rows already; the hour keeps them for an investigation
 * of the freshest ones) and retired signing keys past their overlap (no token they signed is
 * valid, and they are out of the JWKS). Bounded per call; idempotent: a second pass finds less.
 */
export async function pruneIdTokens(
  db: Db,
  opts: { graceMs?: number; limit?: number } = {},
): Promise<{ tokens: number; keys: number }> {
  const graceS = (opts.graceMs ?? 3600_000) / 1000;
  const limit = opts.limit ?? 10_000;
  const tokens = await db.$executeRaw`
    DELETE FROM id_token WHERE jti IN (
      SELECT jti FROM id_token WHERE expires_at < now() - make_interval(secs => ${graceS}::float8)
      ORDER BY expires_at LIMIT ${limit})`;
  const keys = await db.$executeRaw`
    DELETE FROM id_token_key WHERE retired_at IS NOT NULL
      AND verify_until < now() - make_interval(secs => ${graceS}::float8)`;
  return { tokens, keys };
}
