import type { Db } from "@kiln/db";
import { hashSecret } from "../identity/index.ts";

/** The org an API token belongs to, for its org bucket; null for a token nobody issued. */
interface TokenOrg {
  orgId: string;
  slug: string;
}

/**
 * Token hash -> org, cached for `ttlMs`: the org bucket needs the org before the handler has
 * authenticated anything, and one extra query per request would cost more than the limit saves.
 * A token's org never changes, so staleness only delays noticing a token issued or deleted.
 */
export class ApiTokenOrgCache {
  private readonly entries = new Map<string, { value: TokenOrg | null; expires: number }>();

  constructor(
    private readonly db: Db,
    private readonly ttlMs = 60_000,
    private readonly maxEntries = 10_000,
  ) {}

  async lookup(tokenHash: string): Promise<TokenOrg | null> {
    const now = Date.now();
    const hit = this.entries.get(tokenHash);
    if (hit && hit.expires > now) return hit.value;
    const rows = await this.db.$queryRaw<{ org_id: string; slug: string }[]>`
      SELECT t.org_id, o.slug FROM api_token t JOIN org o ON o.id = t.org_id WHERE t.token_hash = ${tokenHash}`;
    const value = rows[0] ? { orgId: rows[0].org_id, slug: rows[0].slug } : null;
    // Bounded: a flood of made-up tokens must not grow the map without end; the oldest go first.
    if (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(tokenHash, { value, expires: now + this.ttlMs });
    return value;
  }
}

/** The key a presented bearer secret is known by (the same hash api_token stores). */
export function bearerKey(secret: string): string {
  return hashSecret(secret);
}
