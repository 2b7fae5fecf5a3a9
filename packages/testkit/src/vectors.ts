import path from "node:path";

/**
 * Outside test vectors (/work/shared/vectors: sigstore-conformance, Wycheproof, transparency-dev),
 * read in place and never copied into the repo. KILN_VECTORS_DIR points elsewhere (CI's copy of
 * shared/ beside the clone); the default serves /work/main and every /work/wt/<name> alike.
 */
export function vectorPath(...parts: string[]): string {
  return path.join(process.env.KILN_VECTORS_DIR ?? "/work/shared/vectors", ...parts);
}
