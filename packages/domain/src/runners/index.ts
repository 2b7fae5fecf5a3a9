export * from "./states.ts";
export * from "./health.ts";
export * from "./protocol.ts";
