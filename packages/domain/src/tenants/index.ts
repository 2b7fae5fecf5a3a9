// Public API of the tenants capability's pure rules (conventions 4).
export * from "./trust-class.ts";
export * from "./membership-rules.ts";
