export * from "./host-pattern.ts";
export * from "./egress-policy.ts";
