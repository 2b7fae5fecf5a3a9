// Tag -> digest, once, when a run is frozen (seed 000 section 11): every attempt of every job then
// pulls the same bytes, however the tag moves later. A multi-platform index resolves to its
// linux/amd64 manifest. Classification follows the git source: a tag that does not exist is the
// user's failure; a registry we cannot reach is retried and only then the platform's.
import {
  expandShortName,
  isImageError,
  isShortName,
  BUILTIN_SHORT_NAMES,
  manifestKind,
  parseImageRef,
  parseIndex,
  pinnedRef,
  RegistryClient,
  registryEndpoint,
  selectPlatform,
  type ImageErrorCode,
  type RegistryConfig,
} from "@kiln/oci";

export type ResolveImageResult =
  | { ok: true; ref: string; digest: string; pinned: string }
  | { ok: false; kind: ImageFailureKind; cause: string; message: string };

/** "policy": the operator's outbound policy refused the image; the run is blocked_by_policy (issue 20). */
type ImageFailureKind = "not_found" | "unreachable" | "invalid" | "policy";

/** Cause codes recorded on the run when freezing fails on an image. */
const CAUSES: Record<ImageErrorCode, { kind: ImageFailureKind; cause: string }> = {
  "IMAGE.NOT_FOUND": { kind: "not_found", cause: "image.not_found" },
  "IMAGE.UNREACHABLE": { kind: "unreachable", cause: "image.unreachable" },
  // Bytes that do not match what the registry just told us: treat like a flaky registry, retry.
  "IMAGE.DIGEST_MISMATCH": { kind: "unreachable", cause: "image.unreachable" },
  "IMAGE.INVALID_REF": { kind: "invalid", cause: "image.invalid_ref" },
  "IMAGE.BAD_MANIFEST": { kind: "invalid", cause: "image.invalid" },
  "IMAGE.TOO_LARGE": { kind: "invalid", cause: "image.invalid" },
  "IMAGE.NO_PLATFORM": { kind: "invalid", cause: "image.no_platform" },
  "IMAGE.UNAUTHORIZED": { kind: "invalid", cause: "image.unauthorized" },
  "IMAGE.INSECURE": { kind: "invalid", cause: "image.insecure" },
  "IMAGE.UNSAFE_LAYER": { kind: "invalid", cause: "image.unsafe_layer" },
  // The outbound policy (docs/adr/0017): a registry, redirect or realm the operator did not configure.
  // Policy, not a fault of the file or the platform: the sixth outcome, blocked_by_policy.
  "IMAGE.REGISTRY_NOT_ALLOWED": { kind: "policy", cause: "image.not_allowed" },
  "IMAGE.HOST_NOT_ALLOWED": { kind: "policy", cause: "image.not_allowed" },
  "IMAGE.ADDRESS_NOT_ALLOWED": { kind: "policy", cause: "image.not_allowed" },
};

export async function resolveImage(
  config: RegistryConfig,
  ref: string,
  clients = new Map<string, RegistryClient>(),
): Promise<ResolveImageResult> {
  try {
    // A short name (`kiln/node:24`, docs/adr/0040) is the platform registry's image of that name.
    const parsed = parseImageRef(expandShortName(ref, config));
    // Refused here even when pinned: the agents would refuse it later, after a dispatch.
    const endpoint = registryEndpoint(config, parsed.registry);
    // Already pinned by the author: nothing to resolve, and no reason to depend on the registry now.
    if (parsed.digest) return { ok: true, ref, digest: parsed.digest, pinned: pinnedRef(parsed, parsed.digest) };
    let client = clients.get(parsed.registry);
    if (!client) {
      client = new RegistryClient(endpoint);
      clients.set(parsed.registry, client);
    }
    const top = await client.getManifest(parsed.repository, parsed.tag ?? "latest");
    let digest = top.digest;
    if (manifestKind(top.mediaType, top.bytes) === "index") {
      digest = selectPlatform(parseIndex(top.bytes, `index of ${ref}`), ref).digest;
    }
    return { ok: true, ref, digest, pinned: pinnedRef(parsed, digest) };
  } catch (err) {
    if (!isImageError(err)) throw err;
    const c = CAUSES[err.code];
    const hint =
      isShortName(ref) && err.code === "IMAGE.NOT_FOUND"
        ? ` (${ref} is not one of the platform's images: the built-in ones are ${BUILTIN_SHORT_NAMES.join(", ")}; an operator adds more with \`kiln image build\`)`
        : "";
    return { ok: false, kind: c.kind, cause: c.cause, message: `image ${ref}: ${err.message}${hint}` };
  }
}
