// Short names for the platform's own images (docs/adr/0040): `kiln/node:24` in a workflow or a pool
// default means the image of that name in the registry the operator marked `"platform": true` in
// KILN_REGISTRIES. Expanded before resolution, so the run is pinned to that registry's digest like
// any other image and the agents never guess where a short name lives.
import { ImageError } from "./errors.ts";
import type { RegistryConfig } from "./registry-config.ts";

/** The namespace of short names: the first path component, written without a registry host. */
export const SHORT_NAME_NAMESPACE = "kiln";

/** The images `npm run up` builds and publishes (docs/adr/0040); operators add their own with `kiln image build`. */
export const BUILTIN_SHORT_NAMES = ["kiln/build-base:12", "kiln/node:24", "kiln/jdk:17", "kiln/python:3"] as const;

/** True when `ref` is written as `kiln/...` with no registry host in front. */
export function isShortName(ref: string): boolean {
  return ref.startsWith(`${SHORT_NAME_NAMESPACE}/`);
}

/** The registry marked as the platform's, or null when the operator marked none. */
export function platformRegistry(config: RegistryConfig): string | null {
  const hosts = Object.entries(config)
    .filter(([, e]) => e.platform === true)
    .map(([host]) => host);
  if (hosts.length > 1) throw new Error(`KILN_REGISTRIES marks ${hosts.length} registries as the platform's: mark one`);
  return hosts[0] ?? null;
}

/** `kiln/node:24` -> `<platform registry>/kiln/node:24`; any other reference unchanged. */
export function expandShortName(ref: string, config: RegistryConfig): string {
  if (!isShortName(ref)) return ref;
  const registry = platformRegistry(config);
  if (!registry)
    throw new ImageError(
      "IMAGE.INVALID_REF",
      `${ref} is a short name for the platform's own images, but this installation has no platform registry ` +
        `(an operator marks one with "platform": true in KILN_REGISTRIES); write the image's full reference instead`,
    );
  return `${registry}/${ref}`;
}
