// Toolchain images built from Debian packages (docs/adr/0040): specs, the reproducible builder and
// its cache, and publishing to a registry. Used by `npm run up` and `kiln image build`.
export {
  BUILTIN_SPECS,
  DEBIAN,
  imageSpecSchema,
  NODE_VERSION,
  parseSpecText,
  resolveSpec,
  type ImageSpec,
} from "./image-spec.ts";
export {
  buildToolchainImage,
  imageSize,
  BUILDER_VERSION,
  type ToolchainImage,
  type BuildOptions,
} from "./build-toolchain-image.ts";
export { publishToolchainImage } from "./publish-toolchain-image.ts";
export { assertMmdebstrap, MissingToolError } from "./debian-layer.ts";
export { ImageCache } from "./image-cache.ts";
