// Cache key derivation (issue 8, seed 000 section 10). The key is a hash over everything that makes
// restored bytes compatible *and* authorised: tenant, repository, trust namespace, the archive
// format, the platform, the pinned image, the user's version, the declared paths and the content of
// every declared input at the pinned commit. The user's version is only one component, so "deps-v1"
// can never match across repositories or trust namespaces.
//
// The domain stays pure: the caller passes the SHA-256 function (node:crypto in the engine).
import type { TrustClass } from "../tenants/index.ts";

/** Bumped whenever the archive layout or manifest changes, so old entries simply stop matching. */
const CACHE_FORMAT_VERSION = 1;

export const CACHE_KINDS = ["dependencies", "directory"] as const;
export type CacheKind = (typeof CACHE_KINDS)[number];

/** Entries live in a namespace derived from the run's trust class; only "trusted" is ever written. */
export const CACHE_NAMESPACES = ["trusted"] as const;
export type CacheNamespace = (typeof CACHE_NAMESPACES)[number];

export interface CacheKeyInput {
  orgId: string;
  repoId: string;
  namespace: CacheNamespace;
  /**
   * The ref whose entries these are (refs/heads/<branch>): trusted writes are namespaced by ref as
   * well as repo and trust class, so a trusted run on one branch never binds what another reads.
   */
  ref: string;
  os: string;
  arch: string;
  /** The job image's pinned manifest digest; null when the job runs without an image. */
  imageDigest: string | null;
  kind: CacheKind;
  version: string;
  paths: readonly string[];
  /** SHA-256 (hex) of every declared input file at the pinned commit; null for an absent file. */
  inputs: readonly { path: string; sha256: string | null }[];
}

export interface CacheKey {
  /** Exact identity: every component. */
  key: string;
  /** Everything but the input hashes: the fallback identity for dependency caches. */
  prefix: string;
}

export type Sha256Hex = (text: string) => string;

const SHA256_HEX = /^[0-9a-f]{64}$/;

/**
 * Canonical, unambiguous material: a JSON array (strings are escaped, so no component can smuggle
 * a separator into the next). Input order is the declared order, which is fixed by the frozen run.
 */
function cachePrefixMaterial(k: CacheKeyInput): string {
  return JSON.stringify([
    "kiln-cache",
    CACHE_FORMAT_VERSION,
    k.orgId,
    k.repoId,
    k.namespace,
    k.ref,
    k.os,
    k.arch,
    k.imageDigest ?? "-",
    k.kind,
    k.version,
    [...k.paths],
  ]);
}

export function deriveCacheKey(k: CacheKeyInput, sha256: Sha256Hex): CacheKey {
  for (const i of k.inputs) {
    if (i.sha256 !== null && !SHA256_HEX.test(i.sha256))
      throw new Error(`input ${JSON.stringify(i.path)} has a malformed sha256`);
  }
  const prefix = sha256(cachePrefixMaterial(k));
  const key = sha256(JSON.stringify([prefix, k.inputs.map((i) => [i.path, i.sha256 ?? "absent"])]));
  return { key, prefix };
}

/**
 * The refs a run reads trusted entries from, in order: its own ref's, then the default branch's;
 * never another branch's. A run without a usable ref reads the default branch only.
 */
export function cacheReadRefs(ownRef: string | null, defaultBranchRef: string): string[] {
  return ownRef === null || ownRef === defaultBranchRef ? [defaultBranchRef] : [ownRef, defaultBranchRef];
}

/** Every run reads the trusted namespace: read wide (seed 002). */
export function cacheReadNamespace(_trust: TrustClass): CacheNamespace {
  return "trusted";
}

export type CacheWriteDecision =
  | { allowed: true; namespace: CacheNamespace }
  | { allowed: false; reason: "untrusted_run" };

/** Write trusted: an untrusted run is refused with a reason it can show, never silently ignored. */
export function decideCacheWrite(trust: TrustClass): CacheWriteDecision {
  switch (trust) {
    case "trusted":
      return { allowed: true, namespace: "trusted" };
    case "untrusted":
      return { allowed: false, reason: "untrusted_run" };
  }
}

/**
 * Prefix fallback only for dependency caches: package managers re-verify what they use, whereas a
 * directory of compiled outputs produced for other inputs must never be handed out (section 10).
 */
export function allowsPrefixFallback(kind: CacheKind): boolean {
  switch (kind) {
    case "dependencies":
      return true;
    case "directory":
      return false;
  }
}
