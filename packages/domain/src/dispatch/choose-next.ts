import { PoolScheduler } from "./pool-scheduler.ts";
import type { DispatchDecision, DispatchOptions, PoolState } from "./types.ts";

/**
 * Whose job runs next in one pool. Tiers first (interactive > scheduled > background); within a
 * tier, owners under their entitlement before borrowers (that is how lent capacity returns), then
 * the lowest weighted share after one more slot; within an org, FIFO with a bump for jobs of
 * nearly finished runs. Never picks for an org at its hard cap or beyond the pool's capacity,
 * except by preempting background work borrowed beyond another org's entitlement.
 * Pure and deterministic: the order of the input arrays does not matter.
 */
export function chooseNext(state: PoolState, opts: DispatchOptions): DispatchDecision {
  return PoolScheduler.fromState(state, opts).next(state.now);
}
