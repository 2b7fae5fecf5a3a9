// Public API of the retention capability (issue 21, docs/adr/0036-retention-by-provenance.md).
export * from "./retention-classes.ts";
export * from "./retention-windows.ts";
export * from "./eviction.ts";
