import { jainIndex } from "@kiln/domain/dispatch";

export interface OrgShareInput {
  running: number;
  /** Jobs the org could run right now: running + dispatchable queued, limited by its hard cap. */
  demand: number;
  slots: number;
  weight: number;
}

/**
 * The allocation the fair policy aims at: each org gets min(demand, entitlement); the rest of
 * the pool is water-filled over the remaining demand in proportion to weight.
 */
export function targetAllocation(orgs: readonly OrgShareInput[], capacity: number): number[] {
  const target = orgs.map((o) => Math.min(o.demand, o.slots));
  let left = capacity - target.reduce((a, b) => a + b, 0);
  if (left < 0) {
    // Entitlements oversubscribed for the current demand: scale them down proportionally.
    const scale = capacity / (capacity - left);
    return target.map((t) => t * scale);
  }
  const residual = orgs
    .map((o, i) => ({ i, need: o.demand - (target[i] ?? 0), weight: o.weight }))
    .filter((r) => r.need > 0)
    .sort((a, b) => a.need / a.weight - b.need / b.weight);
  let weightLeft = residual.reduce((a, r) => a + r.weight, 0);
  for (const r of residual) {
    const fairShare = (left * r.weight) / weightLeft;
    const grant = Math.min(r.need, fairShare);
    target[r.i] = (target[r.i] ?? 0) + grant;
    left -= grant;
    weightLeft -= r.weight;
  }
  return target;
}

/**
 * Jain's index over normalised service: running / target for every org with demand. 1 means each
 * backlogged org holds exactly its entitlement-aware weighted max-min share. Null when the pool
 * is not contended (everyone's demand fits, so there is nothing to be fair about).
 */
export function normalisedServiceJain(orgs: readonly OrgShareInput[], capacity: number): number | null {
  const totalDemand = orgs.reduce((a, o) => a + o.demand, 0);
  if (totalDemand <= capacity) return null;
  const target = targetAllocation(orgs, capacity);
  const xs: number[] = [];
  orgs.forEach((o, i) => {
    const t = target[i] ?? 0;
    if (o.demand > 0 && t > 0) xs.push(o.running / t);
  });
  return jainIndex(xs);
}
