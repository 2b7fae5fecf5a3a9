// Deployable images of Kiln itself (docs/adr/0046): app layers packed from the repository, images on
// a cached toolchain base, and the OCI image layout they are written to.
export { packTree, type PackTreeOptions } from "./pack-tree.ts";
export { buildAppImage, writeOciLayout, type AppImage, type AppImageSpec } from "./app-image.ts";
