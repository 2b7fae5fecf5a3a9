// Public API of @kiln/oci: image references, registry config and auth, the distribution API client,
// manifest parsing, and building/pushing images. Shared by the control plane (resolve a tag to a
// digest), the host agent (pull by digest) and scripts (publish the base image).
export { ImageError, isImageError, type ImageErrorCode } from "./errors.ts";
export { DIGEST_RE, sha256Digest, assertDigest, digestHex, verifyBytes } from "./digest.ts";
export * from "./media-types.ts";
export { parseImageRef, pinnedRef, isLoopbackHost, type ImageRef } from "./reference.ts";
export {
  parseRegistryConfig,
  registryConfigSchema,
  registryEndpoint,
  type RegistryConfig,
  type RegistryEndpoint,
} from "./registry-config.ts";
export { parseChallenge, type Credentials } from "./registry-auth.ts";
export { RegistryClient, type FetchedManifest } from "./registry-client.ts";
export {
  HOST_PLATFORM,
  manifestKind,
  parseConfig,
  parseIndex,
  parseManifest,
  selectPlatform,
  type ImageConfig,
  type ImageIndex,
  type ImageManifest,
} from "./manifests.ts";
export { writeTar, type TarEntry, type TarEntryType } from "./tar-writer.ts";
export { buildImage, pushImage, type BuiltImage } from "./image-builder.ts";
