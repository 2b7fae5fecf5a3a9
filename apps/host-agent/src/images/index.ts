// Images capability on the agent (docs/adr/0012-images-by-digest.md): pull by digest, verify,
// cache within a byte budget, unpack safely.
export { ImagePreparer, type ImagePreparerConfig, type PreparedImage } from "./prepare-image.ts";
export { imageFailureVerdict, noShellVerdict } from "./image-verdict.ts";
export { imageHasShell } from "./image-shell.ts";
export { LayerApplier } from "./safe-unpack.ts";
