import type { WorkflowDefinition } from "@kiln/domain";
import { expandShortName, type RegistryClient, type RegistryConfig } from "@kiln/oci";
import { resolveImage, type ResolveImageResult } from "./resolve-image.ts";

export type PinImagesResult = { ok: true; definition: WorkflowDefinition } | Extract<ResolveImageResult, { ok: false }>;

/**
 * Returns the definition with every job's image pinned (`image.digest` beside the ref as written).
 * A job without `image:` gets the pool's default base image when one is configured. Each distinct
 * ref is resolved once; a short name (`kiln/node:24`) is frozen as the platform registry's full reference. The first failure wins, preferring a user error (not found,
 * invalid) over "unreachable", so a typo is reported at once rather than after the retries.
 */
export async function pinImages(
  def: WorkflowDefinition,
  config: RegistryConfig,
  defaultRef: string | null = null,
): Promise<PinImagesResult> {
  if (defaultRef) def = { ...def, jobs: def.jobs.map((j) => (j.image ? j : { ...j, image: { ref: defaultRef } })) };
  const refs = [...new Set(def.jobs.flatMap((j) => (j.image ? [j.image.ref] : [])))];
  if (refs.length === 0) return { ok: true, definition: def };
  const clients = new Map<string, RegistryClient>();
  const results = new Map<string, ResolveImageResult>();
  for (const ref of refs) results.set(ref, await resolveImage(config, ref, clients));
  const failures = [...results.values()].filter((r): r is Extract<ResolveImageResult, { ok: false }> => !r.ok);
  const failure = failures.find((f) => f.kind !== "unreachable") ?? failures[0];
  if (failure) return failure;
  const jobs = def.jobs.map((j) => {
    const r = j.image ? results.get(j.image.ref) : undefined;
    // A short name is frozen as its full reference (docs/adr/0040): the agents pull from the platform
    // registry by digest and need not know what `kiln/...` means.
    return r?.ok && j.image ? { ...j, image: { ref: expandShortName(j.image.ref, config), digest: r.digest } } : j;
  });
  return { ok: true, definition: { ...def, jobs } };
}
