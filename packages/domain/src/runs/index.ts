// Public API of the runs capability's pure rules (conventions 4).
export * from "./outcomes.ts";
export * from "./run-state-machine.ts";
export * from "./job-graph.ts";
export * from "./git-ref.ts";
export * from "./run-filters.ts";
export * from "./rerun-plan.ts";
