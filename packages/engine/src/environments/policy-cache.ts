import type { DbOrTx } from "@kiln/db";
import { gatePolicySchema, type GatePolicy } from "@kiln/domain";

// The warm policy cache (seed 002: "cached per tenant for a p99 decision under 500 ms"). Policy
// versions are immutable rows, so an entry keyed by (environment, version) can never be stale:
// a new version is a new key, and the version in force is read from the environment row under
// its lock on every decision. Bounded; the oldest entry goes first.

export class PolicyCache {
  private readonly entries = new Map<string, GatePolicy>();
  constructor(private readonly max = 10_000) {}

  /** The policy of (environment, version), or null when no such version exists (GATE.UNAVAILABLE). */
  async get(db: DbOrTx, environmentId: string, version: number): Promise<GatePolicy | null> {
    const key = `${environmentId}:${version}`;
    const hit = this.entries.get(key);
    if (hit) return hit;
    const rows = await db.$queryRaw<{ policy: unknown }[]>`
      SELECT policy FROM environment_policy WHERE environment_id = ${environmentId}::uuid AND version = ${version}`;
    const row = rows[0];
    if (!row) return null;
    const parsed = gatePolicySchema.safeParse(row.policy);
    if (!parsed.success) return null;
    if (this.entries.size >= this.max) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(key, parsed.data);
    return parsed.data;
  }

  get size(): number {
    return this.entries.size;
  }
}
