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
export { assembleImage, buildImage, pushImage, type BuiltImage, type LayerDescriptor } from "./image-builder.ts";
// Outbound policy for fetches made on a tenant's behalf (docs/adr/0017): addresses, clone URLs, git.
export { classifyAddress, permittedClasses, type AddressClass } from "./outbound/address-policy.ts";
export { AddressRefusedError, resolveChecked } from "./outbound/resolve-checked.ts";
export {
  checkCloneUrl,
  prepareCloneUrl,
  redactCredentials,
  CloneUrlError,
  isCloneUrlError,
  type CloneUrlErrorCode,
  type CheckedCloneUrl,
  type GitProtocol,
  type PreparedCloneUrl,
  type SourcePolicy,
} from "./outbound/clone-url.ts";
export { gitEnvironment, runGit, GitError, type GitHttpAuth, type RunGitOptions } from "./outbound/git-process.ts";
export {
  BUILTIN_SHORT_NAMES,
  expandShortName,
  isShortName,
  platformRegistry,
  SHORT_NAME_NAMESPACE,
} from "./short-names.ts";
export * from "./toolchain/index.ts";
export * from "./app-images/index.ts";
