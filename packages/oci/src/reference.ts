// Image references as Docker spells them: [registry[:port]/]repository[:tag][@sha256:...].
import { DIGEST_RE } from "./digest.ts";
import { ImageError } from "./errors.ts";

export interface ImageRef {
  /** host[:port] as written (docker.io when the reference names no registry). */
  registry: string;
  repository: string;
  tag: string | null;
  digest: string | null;
}

const COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const TAG = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
const HOST =
  /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9a-fA-F:]+\])(?::[0-9]{1,5})?$/;

export function parseImageRef(ref: string): ImageRef {
  const bad = (why: string) =>
    new ImageError("IMAGE.INVALID_REF", `image reference ${JSON.stringify(ref.slice(0, 300))} ${why}`);
  if (ref.length === 0 || ref.length > 512 || /\s/.test(ref)) throw bad("is empty, too long or contains whitespace");
  let rest = ref;
  let digest: string | null = null;
  const at = rest.indexOf("@");
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!DIGEST_RE.test(digest)) throw bad("has a digest that is not sha256:<64 hex>");
  }
  const slash = rest.indexOf("/");
  let registry = "docker.io";
  const first = slash >= 0 ? rest.slice(0, slash) : "";
  // Docker's rule: the first component is a registry if it looks like a host (dot, port or localhost).
  if (slash >= 0 && (first.includes(".") || first.includes(":") || first === "localhost" || first.startsWith("["))) {
    registry = first;
    rest = rest.slice(slash + 1);
    if (!HOST.test(registry)) throw bad(`names an invalid registry host ${JSON.stringify(registry)}`);
  }
  let tag: string | null = null;
  const colon = rest.lastIndexOf(":");
  if (colon > rest.lastIndexOf("/")) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!TAG.test(tag)) throw bad("has an invalid tag");
  }
  if (!rest.split("/").every((c) => COMPONENT.test(c)))
    throw bad("has an invalid repository name (lowercase letters, digits, . _ - and /)");
  if (registry === "docker.io" && !rest.includes("/")) rest = `library/${rest}`;
  if (tag === null && digest === null) tag = "latest";
  return { registry, repository: rest, tag, digest };
}

/** `registry/repository@digest`: the pinned form a frozen run carries. */
export function pinnedRef(ref: ImageRef, digest: string): string {
  return `${ref.registry}/${ref.repository}@${digest}`;
}

export function isLoopbackHost(registry: string): boolean {
  const host = registry.startsWith("[") ? registry.slice(0, registry.indexOf("]") + 1) : registry.split(":")[0];
  return host === "127.0.0.1" || host === "localhost" || host === "[::1]";
}
