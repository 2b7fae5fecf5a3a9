import { agentProtocol, type WorkflowDefinition } from "@kiln/domain";
import { expandShortName, type RegistryClient, type RegistryConfig } from "@kiln/oci";
import { resolveImage, type ResolveImageResult } from "./resolve-image.ts";

export type PinImagesResult = { ok: true; definition: WorkflowDefinition } | Extract<ResolveImageResult, { ok: false }>;

/**
 * Returns the definition with every job's image pinned (`image.digest` beside the ref as written).
 * A job without `image:` gets its own pool's default (`runs_on.pool`, else "default"; `*` stands for
 * every pool without an entry), never another pool's: an org's pool does not inherit the platform's
 * (issue 30). A pool whose default is `host` runs such jobs on its hosts' own system directories, on
 * purpose, recorded as image `host` with no digest. A job with no image in a pool with no default is
 * refused (blocked_by_policy, image.none_for_pool): never silently run on whatever the host has.
 * `poolImages` null (in-process callers that configure no images: tests, benches) leaves such jobs
 * without an image. Each distinct ref is resolved once. The first failure wins, preferring a user
 * error (not found, invalid) over "unreachable", so a typo is reported at once rather than after the
 * retries. A short name (`kiln/node:24`) is frozen as the platform registry's full reference
 * (docs/adr/0040).
 */
export async function pinImages(
  def: WorkflowDefinition,
  config: RegistryConfig,
  poolImages: Record<string, string> | null = null,
): Promise<PinImagesResult> {
  // Jobs that got their pool's declared `host`: the only ones left unresolved. A job's own
  // `image: host` is an image reference like any other (and fails or pins like one).
  const onHost = new Set<number>();
  if (poolImages) {
    const unserved = def.jobs.find((j) => !j.image && !defaultImageFor(poolImages, j.runsOn?.pool));
    if (unserved)
      return {
        ok: false,
        kind: "policy",
        cause: "image.none_for_pool",
        message:
          `job ${unserved.name} names no image and pool ${unserved.runsOn?.pool ?? DEFAULT_POOL} has no default image: ` +
          "name one with `image:` (or the operator sets the pool's default in KILN_POOL_IMAGES, `host` to run on the host's own tools)",
      };
    const jobs = def.jobs.map((j, i) => {
      if (j.image) return j;
      const ref = defaultImageFor(poolImages, j.runsOn?.pool)!;
      if (ref === agentProtocol.HOST_IMAGE) onHost.add(i);
      return { ...j, image: { ref } };
    });
    def = { ...def, jobs };
  }
  const refs = [...new Set(def.jobs.flatMap((j, i) => (j.image && !onHost.has(i) ? [j.image.ref] : [])))];
  if (refs.length === 0) return { ok: true, definition: def };
  const clients = new Map<string, RegistryClient>();
  const results = new Map<string, ResolveImageResult>();
  for (const ref of refs) results.set(ref, await resolveImage(config, ref, clients));
  const failures = [...results.values()].filter((r): r is Extract<ResolveImageResult, { ok: false }> => !r.ok);
  const failure = failures.find((f) => f.kind !== "unreachable") ?? failures[0];
  if (failure) return failure;
  const jobs = def.jobs.map((j, i) => {
    const r = j.image && !onHost.has(i) ? results.get(j.image.ref) : undefined;
    // A short name is frozen as its full reference (docs/adr/0040): the agents pull from the platform
    // registry by digest and need not know what `kiln/...` means.
    return r?.ok && j.image ? { ...j, image: { ref: expandShortName(j.image.ref, config), digest: r.digest } } : j;
  });
  return { ok: true, definition: { ...def, jobs } };
}

const DEFAULT_POOL = "default";

function defaultImageFor(poolImages: Record<string, string>, pool: string | undefined): string | null {
  const name = pool ?? DEFAULT_POOL;
  return (Object.hasOwn(poolImages, name) ? poolImages[name] : poolImages["*"]) ?? null;
}
