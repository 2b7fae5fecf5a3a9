// The fleet view and interruptible capacity (issue 22, docs/adr/0035): agent stats, the host list,
// reclaim notices, the interruptible flag of a pool and the share of background minutes it carried.
export { recordSessionStats, type SessionStats } from "./record-session-stats.ts";
export { requestReclaim, type ReclaimInput } from "./request-reclaim.ts";
export { setPoolInterruptible, type SetInterruptibleInput, type InterruptibleView } from "./set-pool-interruptible.ts";
export { interruptibleShares, type PoolShare } from "./interruptible-share.ts";
export { listFleet, type FleetHost } from "./list-fleet.ts";
