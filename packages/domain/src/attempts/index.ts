// Public API of the attempts capability's pure rules (conventions 4).
export * from "./attempt-decisions.ts";
export * from "./retry-policy.ts";
