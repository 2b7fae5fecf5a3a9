export * from "./states.ts";
