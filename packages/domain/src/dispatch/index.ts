// Public API of the dispatch capability (conventions 4).
export * from "./types.ts";
export { chooseNext } from "./choose-next.ts";
export { planQueue, type PlanOptions } from "./plan-queue.ts";
export { PoolScheduler, type PoolSchedulerConfig } from "./pool-scheduler.ts";
export { jainIndex, percentileOfSorted } from "./metrics.ts";
export * from "./placement.ts";
export * from "./runner-sizes.ts";
export * from "./interruptible.ts";
