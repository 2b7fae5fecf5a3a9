export * from "./part-plan.ts";
export * from "./artifact-rules.ts";
export * from "./artifact-paths.ts";
