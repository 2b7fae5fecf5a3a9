// Public API of the forge capability's pure rules (conventions 4).
export * from "./forge-status.ts";
export * from "./link-header.ts";
export * from "./github-event.ts";
