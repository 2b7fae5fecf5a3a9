// Public API of the caches capability (issue 8, docs/adr/0014-build-caches.md).
export * from "./cache-key.ts";
export * from "./cache-rules.ts";
export * from "./cache-manifest.ts";
