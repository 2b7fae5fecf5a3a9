export { createObjectStore, type ObjectStoreConfig } from "./object-store.ts";
