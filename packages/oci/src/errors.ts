// Every registry or image failure carries one of these codes, so callers classify without parsing
// messages: NOT_FOUND is the user's (a tag or digest that does not exist), UNREACHABLE and
// DIGEST_MISMATCH are the platform's (retry), the rest say what was wrong with the bytes or config.
// REGISTRY_NOT_ALLOWED, HOST_NOT_ALLOWED and ADDRESS_NOT_ALLOWED are the outbound policy's refusals
// (docs/adr/0017-outbound-fetches-on-a-tenants-behalf.md): an unconfigured registry, a redirect or
// token realm on an unconfigured host, a name resolving to an address its host may not reach.
export type ImageErrorCode =
  | "IMAGE.INVALID_REF"
  | "IMAGE.NOT_FOUND"
  | "IMAGE.UNREACHABLE"
  | "IMAGE.UNAUTHORIZED"
  | "IMAGE.DIGEST_MISMATCH"
  | "IMAGE.BAD_MANIFEST"
  | "IMAGE.NO_PLATFORM"
  | "IMAGE.INSECURE"
  | "IMAGE.REGISTRY_NOT_ALLOWED"
  | "IMAGE.HOST_NOT_ALLOWED"
  | "IMAGE.ADDRESS_NOT_ALLOWED"
  | "IMAGE.TOO_LARGE"
  | "IMAGE.UNSAFE_LAYER";

export class ImageError extends Error {
  constructor(
    readonly code: ImageErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "ImageError";
  }
}

export function isImageError(err: unknown, code?: ImageErrorCode): err is ImageError {
  return err instanceof ImageError && (code === undefined || err.code === code);
}
