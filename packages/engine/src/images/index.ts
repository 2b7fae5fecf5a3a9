// Images capability (docs/adr/0012-images-by-digest.md): pin tags to digests at freeze time.
export { resolveImage, type ResolveImageResult } from "./resolve-image.ts";
export { pinImages, type PinImagesResult } from "./pin-images.ts";
export { parseAgentRegistries, registriesForAgents } from "./agent-registries.ts";
