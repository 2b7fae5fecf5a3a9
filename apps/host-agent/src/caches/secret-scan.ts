// Credentials never go into reusable archives (seed 000 section 14, issue 16): before a cache
// save is offered, the packed archive is decompressed and its bytes scanned for the job's secret
// values. The scan streams through the same boundary-safe matcher the log masker uses, so a value
// split across two gzip output blocks is still found.
import { createReadStream } from "node:fs";
import { createGunzip } from "node:zlib";
import { SecretMasker } from "@kiln/domain";

export const CACHE_REFUSED_SECRET = "CACHE.CONTAINS_SECRET";

/** True when the gzip'd tar at `file` contains any of `values` (their raw bytes, anywhere in it). */
export async function archiveContainsSecret(file: string, values: readonly string[]): Promise<boolean> {
  const patterns = values.filter((v) => v.length >= 4);
  if (patterns.length === 0) return false;
  const scanner = new SecretMasker(patterns);
  const stream = createReadStream(file).pipe(createGunzip());
  for await (const chunk of stream) {
    scanner.push(chunk as Buffer);
    if (scanner.hits > 0) {
      stream.destroy();
      return true;
    }
  }
  scanner.end();
  return scanner.hits > 0;
}
