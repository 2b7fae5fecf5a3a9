// Crypto-shredding (issue 21, docs/adr/0037-crypto-shredding.md): chunked AES-256-GCM objects under
// data keys per org, day, kind and class, double-wrapped (org DEK, per-due-day platform key file),
// destroyed at D + window with append-only evidence, and a sampler that proves reads fail after.
export { openBuffer, sealBuffer, SealStream, OpenStream, openRange, type DataKey } from "@kiln/chunk-cipher";
export { PlatformKeyStore } from "./platform-keys.ts";
export { dataKeyForRead, dataKeyForWrite, type ShredKeyDeps, type WriteKey } from "./data-keys.ts";
export { destroyDueKeys, type DestroyReport } from "./destroy-keys.ts";
export { runShredScope, ShredLogCipher, type SegmentOpener, type SegmentSealer } from "./log-cipher.ts";
export {
  listShredLeaks,
  sampleDeletions,
  type DeletedObject,
  type SampleReport,
  type ShredLeak,
  type ShredProbe,
} from "./sample-deletions.ts";
export { logProbes, s3ObjectGetter, type LogProbeDeps } from "./log-probes.ts";
export { listDestructionEvidence, type DestructionEvidence } from "./deletion-evidence.ts";
