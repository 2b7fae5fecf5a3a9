export * from "./chunk-framing.ts";
export * from "./shred-schedule.ts";
export * from "./sealed-parts.ts";
